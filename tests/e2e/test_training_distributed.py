"""Several instances: algo-1 … algo-N on their own network, sharded data, merged artifacts."""

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import read_tar_gz, shell_job, training_request, unique_name, wait_for_status

SCRIPT_DIR = Path(__file__).parent / "script_mode"

# Each host writes its resourceconfig and proves it reaches the other by name over TCP (with
# retries, as SageMaker advises, since names can take a moment to resolve; no ping: raw sockets
# need NET_RAW, which containers do not get). It answers until both hosts reached it, so that
# neither leaves before the other's probe.
PEER_PROBE = """
me=$(hostname)
cp /opt/ml/input/config/resourceconfig.json /opt/ml/model/resourceconfig-$me.json
printf 'echo>>/tmp/in;echo reachable' >/tmp/a
nc -ll -p 7000 -e sh /tmp/a &
for p in algo-1 algo-2; do
  for i in $(seq 50); do
    nc -w 1 $p 7000 </dev/null >/tmp/r 2>&1 && [ -s /tmp/r ] && cp /tmp/r /opt/ml/model/$me-sees-$p && break
    sleep 0.2
  done
done
for i in $(seq 150); do [ $(cat /tmp/in | wc -l) -ge 2 ] && break; sleep 0.2; done
ls /opt/ml/input/data/train > /opt/ml/model/files-$me
"""


def test_two_instances_resolve_each_other_and_their_models_merge_into_one_archive(
    sagemaker, s3, bucket, shell_algo_image
):
    for index in range(4):
        s3.put_object(Bucket=bucket, Key=f"shards/part-{index}.csv", Body=f"{index}\n".encode())
    name = unique_name("twohosts")
    request = shell_job(
        name,
        shell_algo_image,
        bucket,
        PEER_PROBE,
        InputDataConfig=[
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": f"s3://{bucket}/shards/",
                        "S3DataDistributionType": "ShardedByS3Key",
                    }
                },
            }
        ],
    )
    request["ResourceConfig"]["InstanceCount"] = 2
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    for host in ("algo-1", "algo-2"):
        config = json.loads(model[f"resourceconfig-{host}.json"])
        assert config["current_host"] == host
        assert config["hosts"] == ["algo-1", "algo-2"]
        for peer in ("algo-1", "algo-2"):
            assert model[f"{host}-sees-{peer}"] == b"reachable\n"
    shard_1 = model["files-algo-1"].split()
    shard_2 = model["files-algo-2"].split()
    assert len(shard_1) == len(shard_2) == 2
    assert sorted(shard_1 + shard_2) == [f"part-{index}.csv".encode() for index in range(4)]


@pytest.mark.parametrize("on_sigterm", [
    "trap 'exit 0' TERM",  # ends when told
    "trap '' TERM",  # ignores SIGTERM, as an MPI job's toolkit (PID 1) does
])
def test_one_failing_instance_stops_the_others_promptly_and_fails_the_job_with_its_reason(
    sagemaker, bucket, shell_algo_image, on_sigterm
):
    """The other instance is stopped with SIGTERM and, if it ignores it, SIGKILLed after the short
    failure grace (SAGEPORT_FAILURE_STOP_GRACE_SECONDS), not after a user stop's 120 s. (The test
    stack's stop grace is only 3 s: tests/unit/training/test_reconciler_steps.py pins which grace
    applies.)"""
    script = f"""
if [ "$(hostname)" = "algo-2" ]; then
  sleep 1; echo 'algo-2 ran out of patience' > /opt/ml/output/failure; exit 1
fi
{on_sigterm}
while true; do sleep 0.2; done
"""
    name = unique_name("onefails")
    request = shell_job(name, shell_algo_image, bucket, script)
    request["ResourceConfig"]["InstanceCount"] = 2
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name, timeout=90)

    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"] == "AlgorithmError: algo-2 ran out of patience, exit code: 1"
    assert (job["TrainingEndTime"] - job["TrainingStartTime"]).total_seconds() < 30


def test_a_late_instance_still_resolves_an_instance_that_ended_long_before(
    sagemaker, s3, bucket, python_image
):
    """Docker's DNS forgets an exited container; /etc/hosts keeps every algo-N for the job's
    life. algo-1 ends as soon as algo-2 reached it; algo-2 waits until algo-1's container is
    gone, then looks it up (tests/e2e/script_mode/train.py, run here without the toolkit)."""
    s3.put_object(Bucket=bucket, Key="code/train.py", Body=(SCRIPT_DIR / "train.py").read_bytes())
    name = unique_name("lateres")
    request = training_request(
        name, python_image, bucket,
        AlgorithmSpecification={
            "TrainingImage": python_image, "TrainingInputMode": "File",
            "ContainerEntrypoint": ["python3", "/opt/ml/input/data/code/train.py"],
        },
        InputDataConfig=[{
            "ChannelName": "code",
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/code/"}},
        }],
        Environment={"ALGO_1_ENDS_FIRST": "1"},
    )
    request["ResourceConfig"]["InstanceCount"] = 2
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name, timeout=300)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    first, second = (json.loads(model[f"algo-{index}.json"]) for index in (1, 2))
    assert second["addresses"] == first["addresses"]
    assert len(set(second["addresses"].values())) == 2
