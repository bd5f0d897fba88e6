"""Batch transform: records/s of a job against its container driven directly; the worker's peak memory.

The linear-regression example server (`sageport-examples/python-serve:latest`) is the model.

- Direct: measured before and after the job (their mean), so that a change in the machine's load
  during the run weighs on both sides. The bench runs that image itself (`docker run IMAGE
  serve`, the model at /opt/ml/model, port 8080 on 127.0.0.1) and POSTs the --records CSV lines
  to /invocations, one line a request (what BatchStrategy SingleRecord sends), from
  --concurrency threads over keep-alive connections.
- Transform job: the same lines as one S3 object, CreateTransformJob with SplitType Line,
  BatchStrategy SingleRecord, MaxConcurrentTransforms --concurrency, AssembleWith Line. Its rate
  is records / (TransformEndTime - the data log's first line): the data path from the moment the
  container answered /ping to the job's end (reading S3, splitting, sending, writing `.out`,
  removing the container), not the container's start. Its fixed part, the first request after
  the data log's line and the container's stop, log collection and removal after the last
  answer, is about 0.9 s on the 2-core machine: 20,000 records (the default) keep it a small part
  of the job, as in a transform job's usual size, where 5,000 made it a fifth.
- Memory: an object of 10 x MaxPayloadInMB (1 MiB payloads, 10 MiB of lines, SplitType Line,
  MultiRecord; --object-mib for another size) through a job, while the resident memory of the
  stack's Celery worker (its processes together) is sampled every 20 ms: the peak over the level
  before the job.

Prints both rates, their ratio (the goal of issue 26: >= 0.8) and the memory, in one run.

    . .sageport/env && .venv/bin/python -m bench.transform [--records 20000] [--concurrency 4]

Run it as a module from the repository root; the stack is found through the standard variables
(<data>/env sets them), its worker through --data-dir (the stack's SAGEPORT_DATA_DIR).
"""

import argparse
import io
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import docker
import psutil
import urllib3
from botocore.exceptions import WaiterError

try:
    from bench.common import delete_bucket
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.transform")

IMAGE = "sageport-examples/python-serve:latest"
MODEL = {"coefficients": [2.0, -3.0], "intercept": 5.0}
MEBIBYTE = 1 << 20
SAMPLE_SECONDS = 0.02


def main() -> int:
    options = _arguments()
    lines = [f"{index % 97 / 10},{index % 13 - 6}\n".encode() for index in range(options.records)]
    sagemaker, s3 = boto3.client("sagemaker"), boto3.client("s3")
    name = f"bench-transform-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    try:
        before = _direct(lines, options.concurrency)
        model = _model(sagemaker, s3, name)
        s3.put_object(Bucket=name, Key="rate/records.csv", Body=b"".join(lines))
        job_rate = _job_rate(sagemaker, name, model, options.concurrency, len(lines))
        after = _direct(lines, options.concurrency)
        data_dir = Path(options.data_dir).resolve()
        peak, baseline = _job_memory(sagemaker, s3, name, model, data_dir, options.object_mib)
    finally:
        delete_bucket(s3, name)
    direct = (before + after) / 2  # around the job: a change of the machine's load shows in both
    print(f"direct to the container   {direct:10.0f} records/s  ({options.concurrency} in flight; "
          f"{before:.0f} before the job, {after:.0f} after)")
    print(f"through a transform job    {job_rate:10.0f} records/s  ({options.concurrency} in flight)")
    print(f"ratio job / direct         {job_rate / direct:10.2f}")
    print(
        f"worker memory, {options.object_mib} MiB object at MaxPayloadInMB 1: "
        f"peak {peak / MEBIBYTE:.1f} MiB over {baseline / MEBIBYTE:.1f} MiB before the job"
    )
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000, help="CSV lines to transform (default 20000)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("SAGEPORT_DATA_DIR", ".sageport"),
        help="the stack's data directory",
    )
    parser.add_argument(
        "--object-mib",
        type=int,
        default=10,
        help="the memory phase's object, in MiB (default 10: 10 x 1 MiB)",
    )
    return parser.parse_args()


def _direct(lines: list[bytes], concurrency: int) -> float:
    """Records per second of the container driven by this process, one line a request."""
    with tempfile.TemporaryDirectory() as model_dir:
        (Path(model_dir) / "model.json").write_text(json.dumps(MODEL))
        container = docker.from_env().containers.run(
            IMAGE,
            ["serve"],
            detach=True,
            remove=True,
            ports={"8080/tcp": ("127.0.0.1", None)},
            volumes={model_dir: {"bind": "/opt/ml/model", "mode": "ro"}},
        )
        try:
            pool = urllib3.HTTPConnectionPool("127.0.0.1", _port(container), maxsize=concurrency)
            _wait_ping(pool)

            def send(line: bytes) -> None:
                response = pool.urlopen(
                    "POST", "/invocations", body=line, headers={"Content-Type": "text/csv"}
                )
                if response.status != 200:
                    raise RuntimeError(f"the container answered {response.status}")

            started = time.perf_counter()
            with ThreadPoolExecutor(concurrency) as senders:
                list(senders.map(send, lines))
            return len(lines) / (time.perf_counter() - started)
        finally:
            container.stop(timeout=1)


def _port(container) -> int:
    for _ in range(100):
        container.reload()
        bound = container.ports.get("8080/tcp")
        if bound:
            return int(bound[0]["HostPort"])
        time.sleep(0.05)
    raise RuntimeError("the container's port was never published")


def _wait_ping(pool: urllib3.HTTPConnectionPool) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if pool.urlopen("GET", "/ping", retries=False).status == 200:
                return
        except urllib3.exceptions.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the container never answered /ping")


def _model(sagemaker, s3, bucket: str) -> str:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        data = json.dumps(MODEL).encode()
        info = tarfile.TarInfo("model.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    s3.put_object(Bucket=bucket, Key="model.tar.gz", Body=archive.getvalue())
    sagemaker.create_model(
        ModelName=bucket, PrimaryContainer={"Image": IMAGE, "ModelDataUrl": f"s3://{bucket}/model.tar.gz"}
    )
    return bucket


def _run_job(sagemaker, bucket: str, model: str, prefix: str, **members) -> dict:
    name = f"{bucket}-{prefix}"
    sagemaker.create_transform_job(
        TransformJobName=name,
        ModelName=model,
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/{prefix}/"}},
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        TransformOutput={"S3OutputPath": f"s3://{bucket}/out-{prefix}/", "AssembleWith": "Line"},
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1},
        **members,
    )
    try:
        sagemaker.get_waiter("transform_job_completed_or_stopped").wait(
            TransformJobName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 1800}
        )
    except WaiterError:
        pass  # a failed job: its reason is raised below
    job = sagemaker.describe_transform_job(TransformJobName=name)
    if job["TransformJobStatus"] != "Completed":
        raise RuntimeError(f"{name}: {job['TransformJobStatus']}: {job.get('FailureReason')}")
    return job


def _job_rate(sagemaker, bucket: str, model: str, concurrency: int, records: int) -> float:
    job = _run_job(
        sagemaker, bucket, model, "rate", BatchStrategy="SingleRecord", MaxConcurrentTransforms=concurrency
    )
    logs = boto3.client("logs")
    group = "/aws/sagemaker/TransformJobs"
    streams = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=f"{job['TransformJobName']}/")
    data_log = next(
        s["logStreamName"] for s in streams["logStreams"] if s["logStreamName"].endswith("/data-log")
    )
    first = logs.get_log_events(logGroupName=group, logStreamName=data_log, startFromHead=True)["events"][0]
    seconds = job["TransformEndTime"].timestamp() - first["timestamp"] / 1000
    return records / seconds


def _job_memory(sagemaker, s3, bucket: str, model: str, data_dir: Path, object_mib: int) -> tuple[int, int]:
    """(peak resident bytes over the level before the job, that level) of the stack's worker."""
    line = b"1.5,-2.25\n"
    s3.put_object(Bucket=bucket, Key="memory/big.csv", Body=line * (object_mib * MEBIBYTE // len(line)))
    workers = _worker_processes(data_dir)
    baseline = _resident(workers)
    peak, done = baseline, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(SAMPLE_SECONDS):
            peak = max(peak, _resident(workers))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        _run_job(sagemaker, bucket, model, "memory", BatchStrategy="MultiRecord", MaxPayloadInMB=1)
    finally:
        done.set()
        sampler.join()
    return peak - baseline, baseline


def _worker_processes(data_dir: Path) -> list[psutil.Process]:
    """The stack's Celery worker and its pool's processes (its SAGEPORT_DATA_DIR is `data_dir`)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or [])
            if "celery" in command and " worker" in command:
                if Path(process.environ().get("SAGEPORT_DATA_DIR", "/nonexistent")).resolve() == data_dir:
                    found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    if not found:
        raise RuntimeError(f"no Celery worker of the stack in {data_dir} (give --data-dir)")
    return found


def _resident(processes: list[psutil.Process]) -> int:
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


if __name__ == "__main__":
    sys.exit(main())
