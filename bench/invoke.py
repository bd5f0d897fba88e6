"""InvokeEndpoint throughput and latency against the same container hit directly, in one run.

Deploys the linear-regression example server (`sageport-examples/python-serve:latest`, built by
scripts/build-images.sh) behind an endpoint of a running Sageport, then sends the same small CSV
request with the same concurrency (a) straight to the container's published port with pooled
keep-alive connections, and (b) through InvokeEndpoint with boto3 (SigV4 signing included, as
users see it). Prints requests/s, p50 and p99 of each, and the ratios. Bounded: each phase stops
after --requests requests or --max-seconds seconds. The endpoint is deleted at the end.

    make up && . .sageport/env && .venv/bin/python bench/invoke.py [--requests 2000] [--concurrency 8]

The stack is found through the standard variables (<data>/env sets them): AWS_ENDPOINT_URL_SAGEMAKER,
AWS_ENDPOINT_URL_S3, the access key and AWS_DEFAULT_REGION.
"""

import argparse
import io
import json
import statistics
import sys
import tarfile
import threading
import time
import uuid

import boto3
import docker
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config

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
            _measure(call, 50, options.concurrency, options.max_seconds)  # warm-up
        results = {
            path: _measure(call, options.requests, options.concurrency, options.max_seconds)
            for path, call in phases.items()
        }
    finally:
        _delete(sagemaker, name)
    _report(results, options)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per phase (default 2000)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time limit per phase (default 60)")
    return parser.parse_args()


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
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large",
            }
        ],
    )
    arn = sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name)["EndpointArn"]
    sagemaker.get_waiter("endpoint_in_service").wait(
        EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    return arn


def _signed_invoker(runtime, name: str, concurrency: int):
    """InvokeEndpoint over pooled urllib3 connections, each request SigV4-signed by botocore: the
    platform's cost without boto3's per-call client overhead."""
    url = f"{runtime.meta.endpoint_url}/endpoints/{name}/invocations"
    signer = SigV4Auth(runtime._request_signer._credentials, "sagemaker", runtime.meta.region_name)
    pool = urllib3.PoolManager(maxsize=concurrency)

    def invoke() -> None:
        request = AWSRequest(method="POST", url=url, data=BODY, headers={"Content-Type": "text/csv"})
        signer.add_auth(request)
        response = pool.urlopen("POST", url, body=BODY, headers=dict(request.headers.items()))
        if response.status != 200:
            raise RuntimeError(f"InvokeEndpoint answered {response.status}: {response.data[:200]!r}")

    return invoke


def _container_port(arn: str) -> int:
    [container] = docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})
    return int(container.ports["8080/tcp"][0]["HostPort"])


def _measure(call, requests: int, concurrency: int, max_seconds: float) -> dict:
    latencies: list[float] = []
    failures = started_requests = 0
    lock = threading.Lock()
    started = time.perf_counter()
    deadline = started + max_seconds

    def worker() -> None:
        nonlocal failures, started_requests
        while time.perf_counter() < deadline:
            with lock:
                if started_requests >= requests:
                    return
                started_requests += 1
            begin = time.perf_counter()
            try:
                call()
            except Exception:
                with lock:
                    failures += 1
                continue
            with lock:
                latencies.append(time.perf_counter() - begin)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "requests": len(latencies),
        "failures": failures,
        "per_second": len(latencies) / elapsed,
        "p50_ms": cuts[49] * 1000,
        "p99_ms": cuts[98] * 1000,
    }


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
            throughput = result["per_second"] / direct["per_second"]
            p50, p99 = result["p50_ms"] / direct["p50_ms"], result["p99_ms"] / direct["p99_ms"]
            print(f"ratio {path} / direct: throughput {throughput:.2f}x, p50 {p50:.2f}x, p99 {p99:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
