"""Multi-model endpoint throughput: a working set of models that fits the container's cache
against one that does not, in one run.

Deploys the example multi-model server (`sageport-examples/python-multi-model:latest`, built by
scripts/build-images.sh) behind one endpoint of one instance with 2 × --cache-size models under
its S3 prefix, then sends the same small request through InvokeEndpoint with boto3, cycling
TargetModel (a) over --cache-size models (after the warm-up every request is a cache hit) and
(b) over all of them (more models than the cache holds, in round-robin order: with LRU eviction
every request loads its model and unloads another). --cache-size must be the stack's
SAGEPORT_MULTI_MODEL_MAX_LOADED (default 8). Prints requests/s, p50 and p99 of each and the
ratio. Bounded: each phase stops after --requests requests or --max-seconds seconds. The
endpoint is deleted at the end.

    make bench-multi-model [ARGS='--requests 500 --concurrency 4 --cache-size 8']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.multi_model [--requests 500]
"""

import io
import itertools
import json
import sys
import tarfile
import threading
import uuid

import boto3
from botocore.config import Config

try:
    from bench.common import load_arguments, measure, ratios
    from bench.invoke import deploy_endpoint
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.multi_model")

IMAGE = "sageport-examples/python-multi-model:latest"
BODY = b"1.5"


def main() -> int:
    parser = load_arguments(__doc__)
    parser.add_argument(
        "--cache-size", type=int, default=8, help="the stack's SAGEPORT_MULTI_MODEL_MAX_LOADED (default 8)"
    )
    options = parser.parse_args()
    sagemaker = boto3.client("sagemaker")
    runtime = boto3.client(
        "sagemaker-runtime",
        config=Config(retries={"max_attempts": 1}, max_pool_connections=options.concurrency),
    )
    name = f"bench-mme-{uuid.uuid4().hex[:8]}"
    models = [f"model-{index}.tar.gz" for index in range(2 * options.cache_size)]
    try:
        _deploy(sagemaker, boto3.client("s3"), name, models)
        phases = {
            f"{options.cache_size} models (fit)": _invoker(runtime, name, models[: options.cache_size]),
            f"{len(models)} models (do not fit)": _invoker(runtime, name, models),
        }
        results = {}
        for phase, call in phases.items():
            measure(call, len(models), options.concurrency, options.max_seconds)  # loads them once
            results[phase] = measure(call, options.requests, options.concurrency, options.max_seconds)
    finally:
        _delete(sagemaker, name)
    _report(results, options)
    return 0


def _invoker(runtime, name: str, models: list[str]):
    """InvokeEndpoint with TargetModel taking each of `models` in turn, across the client threads."""
    turn = itertools.cycle(models)
    lock = threading.Lock()

    def invoke() -> None:
        with lock:
            target = next(turn)
        runtime.invoke_endpoint(
            EndpointName=name, Body=BODY, ContentType="application/json", TargetModel=target
        )["Body"].read()

    return invoke


def _deploy(sagemaker, s3, name: str, models: list[str]) -> None:
    bucket = name
    s3.create_bucket(Bucket=bucket)
    for index, key in enumerate(models):
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            data = json.dumps({"coefficient": index + 1}).encode()
            info = tarfile.TarInfo("model.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        s3.put_object(Bucket=bucket, Key=f"models/{key}", Body=archive.getvalue())
    deploy_endpoint(sagemaker, name, {"Image": IMAGE, "Mode": "MultiModel", "ModelDataUrl": f"s3://{bucket}/models/"})


def _delete(sagemaker, name: str) -> None:
    try:
        sagemaker.delete_endpoint(EndpointName=name)
    except Exception as error:  # never hide the measurement behind a cleanup problem
        print(f"warning: could not delete endpoint {name}: {error}", file=sys.stderr)


def _report(results: dict, options) -> None:
    print(f"{options.concurrency} concurrent clients, up to {options.requests} requests per phase")
    print(f"{'working set':<26}{'requests':>9}{'failed':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for phase, result in results.items():
        print(
            f"{phase:<26}{result['requests']:>9}{result['failures']:>8}{result['per_second']:>9.0f}"
            f"{result['p50_ms']:>9.1f}{result['p99_ms']:>9.1f}"
        )
    fits, spills = results.values()
    ratio = ratios(spills, fits)
    print(f"ratio not fitting / fitting: throughput {ratio['throughput']:.2f}x, p50 {ratio['p50']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
