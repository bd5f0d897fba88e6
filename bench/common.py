"""What the benchmarks share: a bounded concurrent load loop and the summary of its latencies, the
ratios against a floor measured in the same run, SigV4-signed HTTP over pooled keep-alive
connections, and removing a bench's bucket."""

import argparse
import math
import statistics
import sys
import threading
import time

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest


def load_arguments(doc: str) -> argparse.ArgumentParser:
    """A parser with a load phase's bounds; its description is the first line of `doc`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per phase (default 2000)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time limit per phase (default 60)")
    return parser


def measure(call, requests: int, concurrency: int, max_seconds: float) -> dict:
    """`call()` from `concurrency` threads until `requests` calls started or `max_seconds` passed; a
    call that raises counts as failed and its latency is left out."""
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
    return summarize(latencies, failures, time.perf_counter() - started)


def summarize(latencies: list[float], failures: int, elapsed: float) -> dict:
    """Completed requests per second of the whole phase, and the p50 and p99 latencies in ms (NaN
    when nothing completed)."""
    if len(latencies) > 1:
        cuts = statistics.quantiles(latencies, n=100)
        p50, p99 = cuts[49], cuts[98]
    else:
        p50 = p99 = latencies[0] if latencies else math.nan
    return {
        "requests": len(latencies),
        "failures": failures,
        "per_second": len(latencies) / elapsed if elapsed > 0 else math.nan,
        "p50_ms": p50 * 1000,
        "p99_ms": p99 * 1000,
    }


def ratios(result: dict, floor: dict) -> dict:
    """`result` over `floor`: throughput above 1 is faster than the floor, latencies below 1 are."""
    def over(key: str) -> float:
        return result[key] / floor[key] if floor[key] else math.nan

    return {"throughput": over("per_second"), "p50": over("p50_ms"), "p99": over("p99_ms")}


class SignedHttp:
    """POSTs SigV4-signed by botocore (once per request, as every AWS client signs) over pooled
    urllib3 connections: the server's cost without boto3's per-call client overhead."""

    def __init__(self, credentials, service: str, region: str, concurrency: int):
        self._signer = SigV4Auth(credentials, service, region)
        self._pool = urllib3.PoolManager(maxsize=concurrency)

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> urllib3.BaseHTTPResponse:
        request = AWSRequest(method="POST", url=url, data=body, headers=headers)
        self._signer.add_auth(request)
        return self._pool.urlopen("POST", url, body=body, headers=dict(request.headers.items()))


def delete_bucket(s3, bucket: str) -> None:
    """The bucket and every object in it; a failure is only reported, never hides the results."""
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects = [{"Key": entry["Key"]} for entry in page.get("Contents", [])]
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects})
        s3.delete_bucket(Bucket=bucket)
    except Exception as error:  # never hide the measurement behind a cleanup problem
        print(f"warning: could not delete bucket {bucket}: {error}", file=sys.stderr)


def deploy_one_instance(sagemaker, name: str) -> str:
    """An endpoint `name` of one ml.m5.large instance of the model `name` (its config named so too),
    InService when this returns; returns its ARN."""
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
