"""A training job's S3 → channel staging and model → S3 packing against raw boto3 transfers of the
same bytes, in one run.

Each round writes a data set of random (incompressible: gzip's worst case) bytes, --files files of
--file-mib MiB and --small-files files of --small-kib KiB, in a temporary directory, and then:
(a) uploads it with boto3 under a new S3 prefix (`upload_file` of every file from 8 threads on one
client: boto3's managed transfers, multipart above 8 MiB), the floor of model → S3; (b) downloads
it back with boto3 the same way (`download_file`, ranged GETs above 8 MiB), the floor of S3 →
channel; (c) runs a training job on a running Sageport whose File channel `train` is that prefix
and whose container (`sageport-examples/busybox:latest`, built by scripts/build-images.sh) copies
the channel into /opt/ml/model. The job's own SecondaryStatusTransitions give Sageport's times, as
any client reads them: Downloading (start → end) is the staging of the channel, Uploading (start →
end) the packing of model.tar.gz (tar + gzip of the same bytes) and its upload, plus the small
output.tar.gz; each phase also holds the worker's few milliseconds of bookkeeping around it. One
unmeasured round comes first. Prints the median seconds of each, the ratios Sageport / boto3, then
one summary line. Bounded: at most --repeat rounds, none starts after --max-seconds, and a job not
Completed within --job-timeout stops the bench. The bucket is removed at the end, the temporary
directory too; the jobs stay in the stack (Sageport has no DeleteTrainingJob).

    make bench-staging [ARGS='--repeat 3']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.staging [--repeat 3]

Run it as a module from the repository root. The stack is found through the standard variables
(<data>/env sets them): AWS_ENDPOINT_URL_SAGEMAKER, AWS_ENDPOINT_URL_S3, the access key and
AWS_DEFAULT_REGION.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
from botocore.config import Config

try:
    from bench.common import delete_bucket
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.staging")

IMAGE = "sageport-examples/busybox:latest"
COPY_CHANNEL_TO_MODEL = ["sh", "-c", "cp -r /opt/ml/input/data/train/. /opt/ml/model/"]
THREADS = 8  # boto3's transfers: files at once, on one client with as many connections
STAGE, DOWNLOAD = "Sageport S3 → channel", "boto3 download"
PACK, UPLOAD = "Sageport model → S3", "boto3 upload"
ORDER = (STAGE, DOWNLOAD, PACK, UPLOAD)


def main() -> int:
    options = _arguments()
    sagemaker = boto3.client("sagemaker")
    s3 = boto3.client("s3", config=Config(max_pool_connections=THREADS))
    bucket = f"bench-staging-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    seconds: dict[str, list[float]] = {what: [] for what in ORDER}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-staging-") as scratch:
            data = Path(scratch) / "data"
            files = _write_data_set(data, options)
            deadline = time.monotonic() + options.max_seconds
            for round_number in range(options.repeat + 1):  # round 0 warms up and is not counted
                if round_number > 1 and time.monotonic() > deadline:
                    break
                measured = _round(sagemaker, s3, bucket, round_number, data, files, Path(scratch), options)
                if round_number:
                    for what, value in measured.items():
                        seconds[what].append(value)
    finally:
        delete_bucket(s3, bucket)
    print(report(summarize(seconds), len(seconds[STAGE]), data_size(options)))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4, help="large files (default 4)")
    parser.add_argument("--file-mib", type=int, default=32, help="MiB per large file (default 32)")
    parser.add_argument("--small-files", type=int, default=128, help="small files (default 128)")
    parser.add_argument("--small-kib", type=int, default=64, help="KiB per small file (default 64)")
    parser.add_argument("--repeat", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--job-timeout", type=float, default=120.0,
                        help="seconds a job may take to complete (default 120)")
    parser.add_argument("--max-seconds", type=float, default=150.0,
                        help="no round starts after this many seconds (default 150)")
    options = parser.parse_args()
    if options.repeat < 1 or options.files + options.small_files < 1:
        parser.error("--repeat must be at least 1, and the data set must hold a file")
    if min(options.files, options.file_mib, options.small_files, options.small_kib) < 0:
        parser.error("counts and sizes cannot be negative")
    return options


def data_size(options) -> tuple[int, int]:
    """Bytes of the large files and of the small ones."""
    return options.files * options.file_mib << 20, options.small_files * options.small_kib << 10


def _write_data_set(root: Path, options) -> list[str]:
    names = [f"large/part-{i:03d}.bin" for i in range(options.files)]
    names += [f"small/{i // 64:02d}/record-{i:05d}.bin" for i in range(options.small_files)]
    sizes = [options.file_mib << 20] * options.files + [options.small_kib << 10] * options.small_files
    for name, size in zip(names, sizes, strict=True):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    return names


def _round(sagemaker, s3, bucket: str, number: int, data: Path, files: list[str], scratch: Path,
           options) -> dict[str, float]:
    prefix = f"round-{number}"
    uploaded = _timed(lambda: _in_threads(
        lambda name: s3.upload_file(str(data / name), bucket, f"{prefix}/train/{name}"), files))
    downloads = scratch / f"download-{number}"
    downloaded = _timed(lambda: _in_threads(
        lambda name: _download(s3, bucket, f"{prefix}/train/{name}", downloads / name), files))
    shutil.rmtree(downloads)
    transitions = _job(sagemaker, f"{bucket}-{number}", bucket, prefix, options)
    return {
        UPLOAD: uploaded, DOWNLOAD: downloaded,
        STAGE: phase_seconds(transitions, "Downloading"), PACK: phase_seconds(transitions, "Uploading"),
    }


def _download(s3, bucket: str, key: str, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    s3.download_file(bucket, key, str(destination))


def _in_threads(call, items: list[str]) -> None:
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for _ in pool.map(call, items):
            pass  # raises the first failure


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _job(sagemaker, name: str, bucket: str, prefix: str, options) -> list[dict]:
    """The SecondaryStatusTransitions of a job copying its channel into its model, once Completed."""
    sagemaker.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File",
                                "ContainerEntrypoint": COPY_CHANNEL_TO_MODEL},
        RoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
        InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/{prefix}/train/",
            "S3DataDistributionType": "FullyReplicated"}}}],
        OutputDataConfig={"S3OutputPath": f"s3://{bucket}/{prefix}/output"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
        StoppingCondition={"MaxRuntimeInSeconds": int(options.job_timeout)},
    )
    deadline = time.monotonic() + options.job_timeout
    while time.monotonic() < deadline:
        job = sagemaker.describe_training_job(TrainingJobName=name)
        if job["TrainingJobStatus"] == "Completed":
            return job["SecondaryStatusTransitions"]
        if job["TrainingJobStatus"] in ("Failed", "Stopped"):
            raise RuntimeError(f"job {name} ended {job['TrainingJobStatus']}: {job.get('FailureReason', '')}")
        time.sleep(0.2)
    raise RuntimeError(f"job {name} did not complete within {options.job_timeout:g} s")


def phase_seconds(transitions: list[dict], status: str) -> float:
    """Seconds the job spent in the secondary status `status` (its StartTime to its EndTime)."""
    for transition in transitions:
        if transition["Status"] == status:
            if "EndTime" not in transition:
                raise RuntimeError(f"the job's {status} phase has no end")
            return (transition["EndTime"] - transition["StartTime"]).total_seconds()
    raise RuntimeError(f"the job never went through {status}")


def summarize(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Median seconds of each, and how many times boto3's each of Sageport's takes."""
    median = {what: statistics.median(samples) for what, samples in seconds.items()}
    return median | {f"{STAGE} / {DOWNLOAD}": median[STAGE] / median[DOWNLOAD],
                     f"{PACK} / {UPLOAD}": median[PACK] / median[UPLOAD]}


def report(summary: dict[str, float], rounds: int, sizes: tuple[int, int]) -> str:
    large, small = sizes
    mib = (large + small) / (1 << 20)
    lines = [f"{rounds} rounds of {mib:.0f} MiB (large files {large >> 20} MiB, small files "
             f"{small >> 10} KiB), random bytes; medians:"]
    lines += [f"{what:<24}{summary[what]:>8.2f} s  {mib / summary[what]:>7.1f} MiB/s" for what in ORDER]
    staging, packing = summary[f"{STAGE} / {DOWNLOAD}"], summary[f"{PACK} / {UPLOAD}"]
    lines.append(f"summary: S3 → channel {summary[STAGE]:.2f} s = {staging:.2f}x boto3 download "
                 f"({summary[DOWNLOAD]:.2f} s); model → S3 (tar.gz) {summary[PACK]:.2f} s = {packing:.2f}x "
                 f"boto3 upload ({summary[UPLOAD]:.2f} s)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
