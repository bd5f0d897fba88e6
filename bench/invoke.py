"""InvokeEndpoint throughput and latency against the same container hit directly, in one run.

Deploys the linear-regression example server (`sageport-examples/python-serve:latest`, built by
scripts/build-images.sh) behind an endpoint of a running Sageport, then sends the same small CSV
request with the same concurrency (a) straight to the container's published port with pooled
keep-alive connections, and (b) through InvokeEndpoint with boto3 (SigV4 signing included, as
users see it). Prints requests/s, p50 and p99 of each, and the ratios. Bounded: each phase stops
after --requests requests or --max-seconds seconds. The endpoint is deleted at the end.

    make bench-invoke [ARGS='--requests 2000 --concurrency 8']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.invoke [--requests 2000] [--concurrency 8]

Run it as a module from the repository root (it imports bench.common).

The stack is found through the standard variables (<data>/env sets them): AWS_ENDPOINT_URL_SAGEMAKER,
AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME (the data plane),
AWS_ENDPOINT_URL_S3, the access key and AWS_DEFAULT_REGION.
"""

import argparse
import io
import json
import sys
import tarfile
import uuid

import boto3
import docker
import urllib3
from botocore.config import Config

try:
    from bench.common import SignedHttp, deploy_one_instance, load_arguments, measure, ratios
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.invoke")

IMAGE = "sageport-examples/python-serve:latest"
BODY = b"1.5,-2\n"
MODEL = {"coefficients": [2.0, -3.0], "intercept": 5.0}


def main() -> int:
    options = _arguments()
    sagemaker = boto3.client("sagemaker")
    runtime = boto3.client(
        "sagemaker-runtime",
        config=Config(retries={"max_attempts": 1}, max_pool_connections=options.concurrency),
    )
    name = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        arn = _deploy(sagemaker, boto3.client("s3"), name)
        port = _container_port(arn)
        direct_pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=options.concurrency)

        def direct() -> None:
            response = direct_pool.urlopen(
                "POST", "/invocations", body=BODY, headers={"Content-Type": "text/csv"}
            )
            if response.status != 200:
                raise RuntimeError(f"container answered {response.status}")

        def with_boto3() -> None:
            runtime.invoke_endpoint(EndpointName=name, Body=BODY, ContentType="text/csv")["Body"].read()

        phases = {
            "direct to the container": direct,
            "InvokeEndpoint, signed": _signed_invoker(runtime, name, options.concurrency),
            "InvokeEndpoint, boto3": with_boto3,
        }
        for call in phases.values():
            measure(call, 50, options.concurrency, options.max_seconds)  # warm-up
        results = {
            path: measure(call, options.requests, options.concurrency, options.max_seconds)
            for path, call in phases.items()
        }
    finally:
        _delete(sagemaker, name)
    _report(results, options)
    return 0


def _arguments() -> argparse.Namespace:
    return load_arguments(__doc__).parse_args()


def _deploy(sagemaker, s3, name: str) -> str:
    bucket = name
    s3.create_bucket(Bucket=bucket)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        data = json.dumps(MODEL).encode()
        info = tarfile.TarInfo("model.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    s3.put_object(Bucket=bucket, Key="model.tar.gz", Body=archive.getvalue())
    sagemaker.create_model(
        ModelName=name, PrimaryContainer={"Image": IMAGE, "ModelDataUrl": f"s3://{bucket}/model.tar.gz"}
    )
    return deploy_one_instance(sagemaker, name)


def _signed_invoker(runtime, name: str, concurrency: int):
    """InvokeEndpoint signed per request over pooled connections, without boto3's per-call work."""
    url = f"{runtime.meta.endpoint_url}/endpoints/{name}/invocations"
    credentials = runtime._request_signer._credentials
    http = SignedHttp(credentials, "sagemaker", runtime.meta.region_name, concurrency)

    def invoke() -> None:
        response = http.post(url, BODY, {"Content-Type": "text/csv"})
        if response.status != 200:
            raise RuntimeError(f"InvokeEndpoint answered {response.status}: {response.data[:200]!r}")

    return invoke


def _container_port(arn: str) -> int:
    [container] = docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})
    return int(container.ports["8080/tcp"][0]["HostPort"])


def _delete(sagemaker, name: str) -> None:
    try:
        sagemaker.delete_endpoint(EndpointName=name)
        sagemaker.get_waiter("endpoint_deleted").wait(
            EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
    except Exception as error:  # never hide the measurement behind a cleanup problem
        print(f"warning: could not delete endpoint {name}: {error}", file=sys.stderr)


def _report(results: dict, options: argparse.Namespace) -> None:
    print(
        f"{options.concurrency} concurrent clients, up to {options.requests} requests per phase, "
        f"body {len(BODY)} B"
    )
    print(f"{'path':<26}{'requests':>9}{'failed':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for path, result in results.items():
        print(
            f"{path:<26}{result['requests']:>9}{result['failures']:>8}{result['per_second']:>9.0f}"
            f"{result['p50_ms']:>9.1f}{result['p99_ms']:>9.1f}"
        )
    direct = results["direct to the container"]
    for path, result in results.items():
        if result is not direct:
            ratio = ratios(result, direct)
            print(f"ratio {path} / direct: throughput {ratio['throughput']:.2f}x, p50 {ratio['p50']:.2f}x, "
                  f"p99 {ratio['p99']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
