"""A no-op training job, CreateTrainingJob → Training → Completed, against `docker run --rm` of the
same image and command, in one run.

Each repetition creates a training job on a running Sageport whose container is the busybox example
image (`sageport-examples/busybox:latest`, built by scripts/build-images.sh) running `true`, and
polls DescribeTrainingJob every --poll-seconds until it is Completed, noting when it first showed
InProgress/Training; then it runs the same image and command through the Docker SDK as `docker run
--rm` does (create, start, wait, remove). One unmeasured round of each comes first. Prints the
median seconds of each, the ratio Sageport / docker run, then one summary line. Bounded: at most
--repeat rounds, none starts after --max-seconds, and a job not Completed within --job-timeout
stops the bench. The bucket the jobs wrote to and any container left by `docker run` are removed at
the end; the jobs stay in the stack (Sageport has no DeleteTrainingJob).

    make bench-job-lifecycle [ARGS='--repeat 5']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.job_lifecycle [--repeat 5]

Run it as a module from the repository root. The stack is found through the standard variables
(<data>/env sets them): AWS_ENDPOINT_URL_SAGEMAKER, AWS_ENDPOINT_URL_S3, the access key and
AWS_DEFAULT_REGION.
"""

import argparse
import statistics
import sys
import time
import uuid

import boto3
import docker

try:
    from bench.common import delete_bucket
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.job_lifecycle")

IMAGE = "sageport-examples/busybox:latest"
COMMAND = ["true"]
LABEL = "sageport.bench=job_lifecycle"  # on the `docker run` containers, to remove leftovers
TRAINING, COMPLETED, DOCKER = "Sageport → Training", "Sageport → Completed", "docker run --rm"


def main() -> int:
    options = _arguments()
    sagemaker, s3, engine = boto3.client("sagemaker"), boto3.client("s3"), docker.from_env()
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    seconds: dict[str, list[float]] = {TRAINING: [], COMPLETED: [], DOCKER: []}
    try:
        deadline = time.monotonic() + options.max_seconds
        for round_number in range(options.repeat + 1):  # round 0 warms up and is not counted
            if round_number > 1 and time.monotonic() > deadline:
                break
            training, completed = _job(sagemaker, f"{bucket}-{round_number}", bucket, options)
            bare = _docker_run(engine)
            if round_number:
                seconds[TRAINING].append(training)
                seconds[COMPLETED].append(completed)
                seconds[DOCKER].append(bare)
    finally:
        _remove_leftovers(engine)
        delete_bucket(s3, bucket)
    print(_report(summarize(seconds), len(seconds[DOCKER]), options))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="measured rounds (default 5)")
    parser.add_argument("--poll-seconds", type=float, default=0.05,
                        help="DescribeTrainingJob interval (default 0.05)")
    parser.add_argument("--job-timeout", type=float, default=60.0,
                        help="seconds a job may take to complete (default 60)")
    parser.add_argument("--max-seconds", type=float, default=150.0,
                        help="no round starts after this many seconds (default 150)")
    options = parser.parse_args()
    if options.repeat < 1 or options.poll_seconds <= 0:
        parser.error("--repeat must be at least 1 and --poll-seconds above 0")
    return options


def _job(sagemaker, name: str, bucket: str, options) -> tuple[float, float]:
    """Seconds from CreateTrainingJob to the first InProgress/Training seen, and to Completed."""
    started = time.perf_counter()
    sagemaker.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File",
                                "ContainerEntrypoint": COMMAND},
        RoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
        OutputDataConfig={"S3OutputPath": f"s3://{bucket}/output"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    training = None
    deadline = started + options.job_timeout
    while time.perf_counter() < deadline:
        job = sagemaker.describe_training_job(TrainingJobName=name)
        status, secondary = job["TrainingJobStatus"], job.get("SecondaryStatus")
        now = time.perf_counter() - started
        if training is None and status == "InProgress" and secondary == "Training":
            training = now
        if status == "Completed":
            # a job that trained between two polls is counted as training when it completed
            return (training if training is not None else now), now
        if status in ("Failed", "Stopped"):
            raise RuntimeError(f"job {name} ended {status}: {job.get('FailureReason', '')}")
        time.sleep(options.poll_seconds)
    raise RuntimeError(f"job {name} did not complete within {options.job_timeout:g} s")


def _docker_run(engine) -> float:
    started = time.perf_counter()
    engine.containers.run(IMAGE, COMMAND, remove=True, labels=dict([LABEL.split("=")]))
    return time.perf_counter() - started


def _remove_leftovers(engine) -> None:
    for container in engine.containers.list(all=True, filters={"label": LABEL}):
        container.remove(force=True)


def summarize(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Median seconds of each, and how many times docker run's median each of Sageport's takes."""
    median = {what: statistics.median(samples) for what, samples in seconds.items()}
    return median | {f"{what} / {DOCKER}": median[what] / median[DOCKER] for what in (TRAINING, COMPLETED)}


def _report(summary: dict[str, float], rounds: int, options) -> str:
    lines = [f"{rounds} rounds, DescribeTrainingJob every {options.poll_seconds:g} s; medians:"]
    lines += [f"{what:<22}{summary[what]:>8.2f} s" for what in (TRAINING, COMPLETED, DOCKER)]
    completed, training = summary[f"{COMPLETED} / {DOCKER}"], summary[f"{TRAINING} / {DOCKER}"]
    lines.append(f"summary: no-op job Completed in {summary[COMPLETED]:.2f} s = {completed:.1f}x "
                 f"docker run --rm ({summary[DOCKER]:.2f} s); Training reached in {summary[TRAINING]:.2f} s "
                 f"({training:.1f}x)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
