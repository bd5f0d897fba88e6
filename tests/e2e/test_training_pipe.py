"""Pipe mode: channels streamed into FIFOs `/opt/ml/input/data/<channel>_<epoch>`, epoch after epoch."""
import hashlib
import json
import os
import signal
import time
from pathlib import Path

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

# Reads epochs 0-2 of both Pipe channels at the same time, as an algorithm may, and writes the
# SHA-256 of each epoch; an epoch's FIFO may appear only once the previous one is done.
READS_THREE_EPOCHS = """
read_epochs() {
  for epoch in 0 1 2; do
    fifo=/opt/ml/input/data/$1_$epoch
    while [ ! -p "$fifo" ]; do sleep 0.1; done
    sha256sum < "$fifo" | cut -d' ' -f1 > /opt/ml/model/$1_$epoch
  done
}
read_epochs train & read_epochs validation &
wait
cp /opt/ml/input/config/inputdataconfig.json /opt/ml/model/
ls /opt/ml/input/data/config > /opt/ml/model/file-channel
"""

# Reads 10 bytes of epoch 0 and closes it, then reads epoch 1 whole.
CLOSES_EPOCH_EARLY = """
until [ -p /opt/ml/input/data/train_0 ]; do sleep 0.1; done
head -c 10 < /opt/ml/input/data/train_0 > /opt/ml/model/head_0
until [ -p /opt/ml/input/data/train_1 ]; do sleep 0.1; done
sha256sum < /opt/ml/input/data/train_1 | cut -d' ' -f1 > /opt/ml/model/train_1
"""

# Reads epoch 0, waits for the test to kill the feeder, then reads epochs 1 and 2.
PAUSES_BETWEEN_EPOCHS = """
for epoch in 0 1 2; do
  until [ -p /opt/ml/input/data/train_$epoch ]; do sleep 0.1; done
  sha256sum < /opt/ml/input/data/train_$epoch | cut -d' ' -f1 > /opt/ml/model/train_$epoch
  if [ $epoch = 0 ]; then sleep 6; fi
done
"""


def pipe_channel(name: str, uri: str, **extra) -> dict:
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri}}
    return {"ChannelName": name, "DataSource": source, **extra}


def pipe_job(name: str, image: str, bucket: str, script: str, channels: list[dict]) -> dict:
    request = shell_job(name, image, bucket, script, InputDataConfig=channels)
    request["AlgorithmSpecification"]["TrainingInputMode"] = "Pipe"
    return request


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode() + b"\n"


def put_objects(s3, bucket: str, objects: dict[str, bytes]) -> bytes:
    """Put the objects; return what one epoch must be: their bytes concatenated in key order."""
    for key, body in objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    return b"".join(objects[key] for key in sorted(objects))


def test_algorithm_reads_three_epochs_of_two_pipe_channels_with_the_s3_bytes(
    sagemaker, s3, bucket, shell_algo_image
):
    train = put_objects(s3, bucket, {
        "pipe/train/part-b": os.urandom(200 * 1024),
        "pipe/train/part-a": b"first\n",
        "pipe/train/part-c": b"last",
    })
    validation = put_objects(s3, bucket, {"pipe/validation/only": os.urandom(70 * 1024)})
    s3.put_object(Bucket=bucket, Key="pipe/config/settings.json", Body=b"{}")
    name = unique_name("pipe")
    channels = [
        pipe_channel("train", f"s3://{bucket}/pipe/train/"),
        pipe_channel("validation", f"s3://{bucket}/pipe/validation"),
        pipe_channel("config", f"s3://{bucket}/pipe/config", InputMode="File"),
    ]
    sagemaker.create_training_job(**pipe_job(name, shell_algo_image, bucket, READS_THREE_EPOCHS, channels))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    for epoch in range(3):
        assert model[f"train_{epoch}"] == sha256(train)
        assert model[f"validation_{epoch}"] == sha256(validation)
    config = json.loads(model["inputdataconfig.json"])
    modes = {channel: entry["TrainingInputMode"] for channel, entry in config.items()}
    assert modes == {"train": "Pipe", "validation": "Pipe", "config": "File"}
    assert model["file-channel"] == b"settings.json\n"


def test_closing_an_epoch_early_gives_the_next_epoch_whole(sagemaker, s3, bucket, shell_algo_image):
    data = put_objects(s3, bucket, {"big/data": os.urandom(1024 * 1024)})
    name = unique_name("pipe-early")
    channels = [pipe_channel("train", f"s3://{bucket}/big/")]
    sagemaker.create_training_job(**pipe_job(name, shell_algo_image, bucket, CLOSES_EPOCH_EARLY, channels))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model == {"head_0": data[:10], "train_1": sha256(data)}


def test_a_pipe_feeder_killed_between_epochs_is_restarted_and_the_algorithm_reads_on(
    stack, sagemaker, s3, bucket, shell_algo_image
):
    data = put_objects(s3, bucket, {"feed/a": b"alpha\n", "feed/b": b"beta\n"})
    name = unique_name("pipe-restart")
    channels = [pipe_channel("train", f"s3://{bucket}/feed/")]
    sagemaker.create_training_job(**pipe_job(name, shell_algo_image, bucket, PAUSES_BETWEEN_EPOCHS, channels))
    pid_file = wait_for_feeder_between_epochs(stack, name)

    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model == {f"train_{epoch}": sha256(data) for epoch in range(3)}


def test_a_pipe_job_carries_on_across_a_worker_crash(stack, sagemaker, s3, bucket, shell_algo_image):
    data = put_objects(s3, bucket, {"crash/a": os.urandom(100 * 1024)})
    name = unique_name("pipe-crash")
    channels = [pipe_channel("train", f"s3://{bucket}/crash/")]
    sagemaker.create_training_job(**pipe_job(name, shell_algo_image, bucket, PAUSES_BETWEEN_EPOCHS, channels))
    wait_for_feeder_between_epochs(stack, name)

    stack.kill_worker()  # the feeder runs in its own session: it outlives the worker
    try:
        time.sleep(1.0)
    finally:
        stack.start_worker()
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model == {f"train_{epoch}": sha256(data) for epoch in range(3)}


def wait_for_feeder_between_epochs(stack, name: str, timeout: float = 60.0) -> Path:
    """The feeder's pid file, once epoch 0 was served and train_1 waits for its reader."""
    deadline = time.monotonic() + timeout
    while True:
        for job_dir in (stack.data_dir / "jobs").glob(f"*-{name}"):
            pid_file = job_dir / "sidecars" / "pipe-algo-1-train.pid"
            if (job_dir / "algo-1" / "input" / "data" / "train_1").exists() and pid_file.exists():
                return pid_file
        assert time.monotonic() < deadline, "epoch 1 of the feeder never appeared"
        time.sleep(0.1)
