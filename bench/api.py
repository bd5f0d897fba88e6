"""DescribeTrainingJob and ListTrainingJobs throughput and latency: Sageport against moto_server, in one run.

Creates the same training job in a running Sageport (a no-op on the busybox example image
`sageport-examples/busybox:latest`, waited for until Completed so that the worker is idle while
the API is measured) and in a moto_server the bench starts on a free 127.0.0.1 port, then sends,
with the same concurrency, (a) DescribeTrainingJob of that job and (b) ListTrainingJobs with
NameContains set to its name (one summary from each target, whatever else the stack holds) through
two clients: `replay`, one request SigV4-signed once and replayed over keep-alive connections
(bench/replay.py: what wrk does, and cheap enough on the client that the server is what is
measured), and `boto3`, a boto3 client signing every call (what users feel, client cost
included). Prints requests/s, p50 and p99 of each phase, the ratios Sageport / moto, then one
summary line. The two targets take turns phase by phase. Bounded: each phase stops after
--requests requests or --max-seconds seconds.

CreateTrainingJob is not measured: Sageport has no DeleteTrainingJob, so every job created would
stay in the stack, and each one is scheduled and run by the worker (making it never run needs an
image the engine would try to pull, or an instance type that happens not to fit the host), while
moto only stores it: the two would not do the same work.

moto is never a dependency of Sageport: on first use the bench makes a virtualenv of its own,
${XDG_CACHE_HOME:-~/.cache}/sageport/bench-moto, installs `moto[server]` there (once; remove the
directory to make it again), and runs its moto_server. At the end moto_server is stopped and the
bucket the job wrote to is deleted; the Sageport job stays (as jobs do: nothing deletes them).

    make bench-api [ARGS='--requests 2000 --concurrency 8']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.api [--requests 2000] [--concurrency 8]

Run it as a module from the repository root. The stack is found through the standard variables
(<data>/env sets them): AWS_ENDPOINT_URL_SAGEMAKER, AWS_ENDPOINT_URL_S3, the access key and
AWS_DEFAULT_REGION.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import boto3
from botocore.config import Config
from botocore.credentials import Credentials

try:
    from bench import replay
    from bench.common import delete_bucket, load_arguments, measure, ratios
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.api")

IMAGE = "sageport-examples/busybox:latest"
MOTO_REQUIREMENT = "moto[server]>=5,<6"
MOTO_VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sageport" / "bench-moto"
MOTO_CREDENTIALS = Credentials("testing", "testing")  # moto accepts any key
START_SECONDS = 30.0
SAGEPORT, MOTO = "Sageport", "moto"
OPERATIONS = ("DescribeTrainingJob", "ListTrainingJobs")
CLIENTS = ("replay", "boto3")


def main() -> int:
    options = _arguments()
    moto_server = _moto_server()
    name = f"bench-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=name)
    try:
        sageport = boto3.client("sagemaker", config=_client_config(options.concurrency))
        _create_job(sageport, name)
        sageport.get_waiter("training_job_completed_or_stopped").wait(
            TrainingJobName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
        with _running(moto_server) as moto_url:
            moto = boto3.client(
                "sagemaker", endpoint_url=moto_url, region_name=sageport.meta.region_name,
                aws_access_key_id=MOTO_CREDENTIALS.access_key,
                aws_secret_access_key=MOTO_CREDENTIALS.secret_key,
                config=_client_config(options.concurrency),
            )
            _create_job(moto, name)
            targets = {
                SAGEPORT: (sageport, sageport._request_signer._credentials),
                MOTO: (moto, MOTO_CREDENTIALS),
            }
            results = _measure_all(targets, name, options)
    finally:
        delete_bucket(s3, name)
    print(_report(results, options))
    return 0


def _arguments() -> argparse.Namespace:
    parser = load_arguments(__doc__)
    options = parser.parse_args()
    if options.requests < 2 or options.concurrency < 1:
        parser.error("--requests must be at least 2 and --concurrency at least 1")
    return options


def _client_config(concurrency: int) -> Config:
    return Config(retries={"max_attempts": 1}, max_pool_connections=concurrency)


def _create_job(sagemaker, name: str) -> None:
    sagemaker.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File",
                                "ContainerEntrypoint": ["true"]},
        RoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
        OutputDataConfig={"S3OutputPath": f"s3://{name}/output"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )


# --- moto_server, from a virtualenv of the bench's own ------------------------------------------

def _moto_server() -> Path:
    """moto_server's path, installing moto into MOTO_VENV first when it is not there yet."""
    stamp = MOTO_VENV / ".installed"
    if not stamp.is_file() or stamp.read_text().strip() != MOTO_REQUIREMENT:
        print(f"installing {MOTO_REQUIREMENT} into {MOTO_VENV} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(MOTO_VENV)], check=True, timeout=300)
        subprocess.run([str(MOTO_VENV / "bin" / "pip"), "install", "--quiet", MOTO_REQUIREMENT],
                       check=True, timeout=600)
        stamp.write_text(MOTO_REQUIREMENT + "\n")
    return MOTO_VENV / "bin" / "moto_server"


@contextmanager
def _running(moto_server: Path):
    """moto_server on a free loopback port; yields its URL, stops it at the end."""
    port = _free_port()
    process = subprocess.Popen([str(moto_server), "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not listen within {START_SECONDS:.0f} s")


# --- the phases ---------------------------------------------------------------------------------

def _phases(client, credentials, name: str, options) -> dict[tuple[str, str], object]:
    """(operation, client kind) → phase(requests) → its result; every answer is checked."""
    parameters = {
        "DescribeTrainingJob": {"TrainingJobName": name},
        "ListTrainingJobs": {"NameContains": name, "MaxResults": 10},
    }

    def replayed(operation: str):
        def phase(requests: int) -> dict:
            # Signed at the start of each phase, so that no phase outlives its signature.
            request = replay.signed_request(
                client.meta.endpoint_url + "/", json.dumps(parameters[operation]).encode(),
                {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": f"SageMaker.{operation}"},
                credentials, "sagemaker", client.meta.region_name,
            )
            return replay.replay(client.meta.endpoint_url, request,
                                 lambda status, body: status == 200 and name.encode() in body,
                                 requests, options.concurrency, options.max_seconds)

        return phase

    def with_boto3(operation: str):
        method = getattr(client, {"DescribeTrainingJob": "describe_training_job",
                                  "ListTrainingJobs": "list_training_jobs"}[operation])

        def call() -> None:
            if name not in json.dumps(method(**parameters[operation]), default=str):
                raise RuntimeError(f"{operation} did not answer about {name}")

        def phase(requests: int) -> dict:
            return measure(call, requests, options.concurrency, options.max_seconds)

        call()  # a wrong answer stops the bench here, not as a column of failures
        return phase

    kinds = {"replay": replayed, "boto3": with_boto3}
    return {(operation, kind): kinds[kind](operation) for operation in OPERATIONS for kind in CLIENTS}


def _measure_all(targets: dict, name: str, options) -> dict[tuple[str, str, str], dict]:
    """(operation, client kind, target) → the phase's result. The targets take turns phase by
    phase (a slower minute of the machine falls on both), each after a short warm-up of the phase
    that must answer without a failure."""
    phases = {target: _phases(client, credentials, name, options)
              for target, (client, credentials) in targets.items()}
    results = {}
    for operation in OPERATIONS:
        for kind in CLIENTS:
            for target in targets:
                phase = phases[target][operation, kind]
                if phase(min(50, options.requests))["failures"]:
                    raise RuntimeError(f"{target} failed {operation} ({kind}) during the warm-up")
                results[operation, kind, target] = phase(options.requests)
    return results


def _report(results: dict[tuple[str, str, str], dict], options) -> str:
    lines = [
        f"{options.concurrency} concurrent clients, up to {options.requests} requests per phase",
        f"{'operation':<21}{'client':<8}{'target':<10}{'requests':>9}{'failed':>8}{'req/s':>9}"
        f"{'p50 ms':>9}{'p99 ms':>9}",
    ]
    for (operation, kind, target), result in results.items():
        lines.append(
            f"{operation:<21}{kind:<8}{target:<10}{result['requests']:>9}{result['failures']:>8}"
            f"{result['per_second']:>9.0f}{result['p50_ms']:>9.1f}{result['p99_ms']:>9.1f}"
        )
    summary = []
    for operation in OPERATIONS:
        for kind in CLIENTS:
            ratio = ratios(results[operation, kind, SAGEPORT], results[operation, kind, MOTO])
            lines.append(f"ratio {SAGEPORT} / {MOTO}, {operation} {kind}: "
                         f"throughput {ratio['throughput']:.2f}x, p50 {ratio['p50']:.2f}x, "
                         f"p99 {ratio['p99']:.2f}x")
            short = operation.split("Training")[0]
            summary.append(f"{short} {kind} {ratio['throughput']:.2f}x")
    failed = sum(result["failures"] for result in results.values())
    lines.append(f"summary: throughput {SAGEPORT}/{MOTO}: " + ", ".join(summary) + f"; {failed} failed")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
