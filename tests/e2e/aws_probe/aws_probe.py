"""A container that uses AWS the way user code does on SageMaker: plain boto3, no credentials
or endpoints of its own, only what the platform gives it. Built into the tests' boto3 image.

`train`: copies s3://$BUCKET/$IN_KEY to s3://$BUCKET/$OUT_KEY (uppercased) and leaves, in
/opt/ml/model, what it was given: the AWS_* variable names, the key it was handed, who STS says
it is and the role IAM answers for it (as `sagemaker.get_execution_role()` looks it up), whether
the network reaches the services gateway, whether it reaches $PEER:8080 (another container), and
what reading s3://$FORBIDDEN_BUCKET/$FORBIDDEN_KEY (another account's) gives, and the parts
InvokeEndpointWithResponseStream returns from $STREAM_ENDPOINT (the token-stream example).
`serve`: answers /ping, and /invocations with the object s3://<bucket>/<key> named by the
request body, read with boto3, and who STS says the container is."""

import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

GATEWAY = "169.254.170.2"


def gateway_reachable() -> bool:
    port = int(os.environ.get("AWS_ENDPOINT_URL_S3", "http://x:1").rsplit(":", 1)[1])
    try:
        socket.create_connection((GATEWAY, port), timeout=3).close()
        return True
    except OSError:
        return False


def peer_reachable(address: str) -> bool:
    try:
        socket.create_connection((address, 8080), timeout=3).close()
        return True
    except OSError:
        return False


def what_i_was_given() -> dict:
    names = sorted(name for name in os.environ if name.startswith("AWS_"))
    report = {"aws_variables": names, "gateway_reachable": gateway_reachable()}
    if os.environ.get("PEER"):
        report["peer_reachable"] = peer_reachable(os.environ["PEER"])
    if "AWS_CONTAINER_CREDENTIALS_FULL_URI" in os.environ:
        import boto3

        credentials = boto3.Session().get_credentials().get_frozen_credentials()
        report["credentials"] = {
            "key": credentials.access_key,
            "secret": credentials.secret_key,
            "token": credentials.token,
        }
        report["region"] = boto3.Session().region_name
        identity = boto3.client("sts").get_caller_identity()
        report["caller"] = {"Account": identity["Account"], "Arn": identity["Arn"]}
        # `arn:aws:sts::<account>:assumed-role/<role>/<session>` → the role's ARN, path included.
        role_name = identity["Arn"].split("/")[1]
        report["role"] = boto3.client("iam").get_role(RoleName=role_name)["Role"]["Arn"]
    return report


def train() -> None:
    report = what_i_was_given()
    print("given:", json.dumps(report["aws_variables"]), flush=True)
    if os.environ.get("IN_KEY"):
        import boto3

        s3 = boto3.client("s3")
        body = s3.get_object(Bucket=os.environ["BUCKET"], Key=os.environ["IN_KEY"])["Body"].read()
        s3.put_object(Bucket=os.environ["BUCKET"], Key=os.environ["OUT_KEY"], Body=body.upper())
        print("copied", os.environ["IN_KEY"], "to", os.environ["OUT_KEY"], flush=True)
    if os.environ.get("FORBIDDEN_KEY"):  # another account's object: what does reading it give?
        report["forbidden"] = read_outcome(os.environ["FORBIDDEN_BUCKET"], os.environ["FORBIDDEN_KEY"])
    if os.environ.get("STREAM_ENDPOINT"):
        report["stream"] = streamed(os.environ["STREAM_ENDPOINT"], os.environ["STREAM_BODY"])
    Path("/opt/ml/model/given.json").write_text(json.dumps(report))


def streamed(endpoint: str, body: str) -> list[str]:
    import boto3

    answer = boto3.client("sagemaker-runtime").invoke_endpoint_with_response_stream(
        EndpointName=endpoint, Body=body, ContentType="application/json"
    )
    return [event["PayloadPart"]["Bytes"].decode() for event in answer["Body"]]


def read_outcome(bucket: str, key: str) -> str:
    import boto3
    from botocore.exceptions import ClientError

    try:
        boto3.client("s3").get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        return error.response["Error"]["Code"]
    return "read"


class Handler(BaseHTTPRequestHandler):
    # Made before serving: importing boto3, making a client and fetching credentials take seconds.
    session = None
    s3 = None

    def do_GET(self):
        self._answer(200, b"{}")

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = self.s3.get_object(Bucket=request["bucket"], Key=request["key"])["Body"].read()
        credentials = self.session.get_credentials().get_frozen_credentials()
        answer = {
            "object": body.decode(),
            "region": self.session.region_name,
            "key": credentials.access_key,
            "secret": credentials.secret_key,
            "caller": self.session.client("sts").get_caller_identity()["Arn"],
        }
        self._answer(200, json.dumps(answer).encode())

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        import boto3

        Handler.session = boto3.Session()
        Handler.s3 = Handler.session.client("s3")
        Handler.session.get_credentials().get_frozen_credentials()
        HTTPServer(("", 8080), Handler).serve_forever()
    else:
        train()
