"""A serverless endpoint's cold start against `docker run` of the same image, in one run.

Cold start: with the linear-regression example server (`sageport-examples/python-serve:latest`,
built by scripts/build-images.sh) as a serverless endpoint (ServerlessConfig, no container until
a request), the time of its first InvokeEndpoint, from the call to the answer: the request waits
while Sageport places, starts and pings the container. Each round deploys a new endpoint (a new
deployment starts with no container) and deletes it afterwards, so no idle timeout is waited for.
Baseline: `docker run` of the same image with the same model mounted and the same memory limit,
from the run to the first answer of POST /invocations (polling /ping in between), then removed.
Prints each round, the medians and their ratio. Bounded: --rounds rounds, each waited on for at
most --max-seconds.

    make bench-serverless [ARGS='--rounds 5']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.serverless [--rounds 5]
"""

import argparse
import io
import json
import statistics
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import boto3
import docker
import urllib3
from botocore.config import Config

try:
    from bench.common import delete_bucket
    from bench.invoke import BODY, IMAGE, MODEL
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.serverless")

MEMORY_MB = 1024
LABEL = "sageport.bench=serverless"  # what this benchmark starts itself, removed at its end


def main() -> int:
    options = _arguments()
    sagemaker = boto3.client("sagemaker")
    runtime = boto3.client(
        "sagemaker-runtime", config=Config(retries={"max_attempts": 1}, read_timeout=options.max_seconds)
    )
    run = uuid.uuid4().hex[:8]
    bucket = f"bench-serverless-{run}"
    model_url = _upload_model(boto3.client("s3"), bucket)
    cold, direct = [], []
    with tempfile.TemporaryDirectory() as model_dir:
        (Path(model_dir) / "model.json").write_text(json.dumps(MODEL))
        engine = docker.from_env()
        try:
            for round_number in range(1, options.rounds + 1):
                cold.append(
                    _cold_start(sagemaker, runtime, f"bench-sl-{run}-{round_number}", model_url, options)
                )
                direct.append(_docker_run(engine, model_dir, options.max_seconds))
                print(f"round {round_number}: cold start {cold[-1]:.2f} s, docker run {direct[-1]:.2f} s")
        finally:
            for container in engine.containers.list(all=True, filters={"label": LABEL}):
                container.remove(force=True)
            delete_bucket(boto3.client("s3"), bucket)
    cold_median, direct_median = statistics.median(cold), statistics.median(direct)
    print(
        f"median of {options.rounds}: serverless cold start {cold_median:.2f} s, "
        f"docker run {direct_median:.2f} s"
    )
    print(f"ratio cold start / docker run: {cold_median / direct_median:.2f}x")
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="cold starts measured (default 5)")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="bound on each wait (default 120)")
    return parser.parse_args()


def _upload_model(s3, bucket: str) -> str:
    s3.create_bucket(Bucket=bucket)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        data = json.dumps(MODEL).encode()
        info = tarfile.TarInfo("model.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    s3.put_object(Bucket=bucket, Key="model.tar.gz", Body=archive.getvalue())
    return f"s3://{bucket}/model.tar.gz"


def _cold_start(sagemaker, runtime, name: str, model_url: str, options) -> float:
    """Seconds of the first InvokeEndpoint of a new serverless endpoint."""
    sagemaker.create_model(ModelName=name, PrimaryContainer={"Image": IMAGE, "ModelDataUrl": model_url})
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": name,
        "ServerlessConfig": {"MemorySizeInMB": MEMORY_MB, "MaxConcurrency": 1},
    }
    sagemaker.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[variant])
    try:
        sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name)
        attempts = int(options.max_seconds)
        sagemaker.get_waiter("endpoint_in_service").wait(
            EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": attempts}
        )
        started = time.perf_counter()
        runtime.invoke_endpoint(EndpointName=name, Body=BODY, ContentType="text/csv")["Body"].read()
        return time.perf_counter() - started
    finally:
        _delete(sagemaker, name)


def _docker_run(engine, model_dir: str, max_seconds: float) -> float:
    """Seconds from `docker run IMAGE serve` to its first answer of POST /invocations."""
    started = time.perf_counter()
    container = engine.containers.run(
        IMAGE,
        "serve",
        detach=True,
        labels=dict([LABEL.split("=")]),
        mem_limit=f"{MEMORY_MB}m",
        ports={"8080/tcp": ("127.0.0.1", None)},
        volumes={model_dir: {"bind": "/opt/ml/model", "mode": "ro"}},
    )
    try:
        container.reload()
        port = int(container.ports["8080/tcp"][0]["HostPort"])
        pool = urllib3.HTTPConnectionPool("127.0.0.1", port, retries=False, timeout=2.0)
        deadline = started + max_seconds
        while time.perf_counter() < deadline:
            if _answers(pool):
                return time.perf_counter() - started
            time.sleep(0.01)  # the baseline polls as the reconciler's ping would
        raise RuntimeError(f"the container did not answer within {max_seconds:g} s")
    finally:
        container.remove(force=True)


def _answers(pool: urllib3.HTTPConnectionPool) -> bool:
    try:
        if pool.urlopen("GET", "/ping").status != 200:
            return False
        return (
            pool.urlopen("POST", "/invocations", body=BODY, headers={"Content-Type": "text/csv"}).status
            == 200
        )
    except urllib3.exceptions.HTTPError:
        return False


def _delete(sagemaker, name: str) -> None:
    for call, argument in (
        (sagemaker.delete_endpoint, {"EndpointName": name}),
        (sagemaker.delete_endpoint_config, {"EndpointConfigName": name}),
        (sagemaker.delete_model, {"ModelName": name}),
    ):
        try:
            call(**argument)
        except Exception as error:  # never hide the measurement behind a cleanup problem
            print(f"warning: could not clean up {name}: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
