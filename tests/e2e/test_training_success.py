"""A training job that succeeds: the container contract and the artifacts, end to end."""

import json
import os

import pytest

from tests.e2e.conftest import read_tar_gz, shell_job, training_request, unique_name, wait_for_status

# Copies what the platform gave the container into the model directory.
CONTRACT_PROBE = """
echo "starting $1"
echo "$1" > /opt/ml/model/argv
cp /opt/ml/input/config/*.json /opt/ml/model/
cp -r /opt/ml/input/data /opt/ml/model/data
env > /opt/ml/model/env
hostname > /opt/ml/model/hostname
chmod +x /opt/ml/input/data/train/a.csv && touch /opt/ml/input/config/mine \
    && echo writable > /opt/ml/model/input-writable
echo extra > /opt/ml/output/data/extra.txt
echo done
"""


def test_completed_job_gets_the_sagemaker_container_contract_and_uploads_artifacts(
    sagemaker, s3, bucket, shell_algo_image
):
    s3.put_object(Bucket=bucket, Key="data/train/a.csv", Body=b"1,2\n")
    s3.put_object(Bucket=bucket, Key="data/train/nested/b.csv", Body=b"3,4\n")
    name = unique_name("contract")
    request = shell_job(
        name,
        shell_algo_image,
        bucket,
        CONTRACT_PROBE,
        HyperParameters={"epochs": "3", "lr": "0.1"},
        InputDataConfig=[
            {
                "ChannelName": "train",
                "ContentType": "text/csv",
                "DataSource": {
                    "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/data/train"}
                },
            }
        ],
    )
    request["Environment"]["USER_SETTING"] = "kept"
    # The job's own identity is the platform's to say, whatever the request's Environment claims.
    request["Environment"]["TRAINING_JOB_NAME"] = "someone-else"
    request["Environment"]["TRAINING_JOB_ARN"] = "arn:aws:sagemaker:us-east-1:999999999999:training-job/x"
    arn = sagemaker.create_training_job(**request)["TrainingJobArn"]
    assert arn == f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}"

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["SecondaryStatus"] == "Completed"
    statuses = [step["Status"] for step in job["SecondaryStatusTransitions"]]
    assert statuses == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    model_uri = f"s3://{bucket}/output/{name}/output/model.tar.gz"
    assert job["ModelArtifacts"]["S3ModelArtifacts"] == model_uri
    assert job["TrainingTimeInSeconds"] >= 1 and job["BillableTimeInSeconds"] >= 1
    assert job["TrainingStartTime"] <= job["TrainingEndTime"]

    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model["argv"] == b"train\n"
    assert json.loads(model["hyperparameters.json"]) == {"epochs": "3", "lr": "0.1"}
    assert json.loads(model["inputdataconfig.json"]) == {
        "train": {
            "ContentType": "text/csv",
            "TrainingInputMode": "File",
            "S3DistributionType": "FullyReplicated",
            "RecordWrapperType": "None",
        }
    }
    resource = json.loads(model["resourceconfig.json"])
    assert resource["current_host"] == "algo-1" and resource["hosts"] == ["algo-1"]
    assert resource["current_instance_type"] == "ml.m5.large"
    assert resource["network_interface_name"] == "eth0"
    assert model["data/train/a.csv"] == b"1,2\n"
    assert model["data/train/nested/b.csv"] == b"3,4\n"
    environment = dict(line.split("=", 1) for line in model["env"].decode().splitlines() if "=" in line)
    assert environment["TRAINING_JOB_NAME"] == name
    assert environment["TRAINING_JOB_ARN"] == arn
    assert environment["USER_SETTING"] == "kept"
    assert model["hostname"] == b"algo-1\n"
    assert model["input-writable"] == b"writable\n", "the input tree is writable, as on SageMaker"
    assert read_tar_gz(s3, bucket, f"output/{name}/output/output.tar.gz") == {"extra.txt": b"extra\n"}


# What the container counts: `nproc` (its affinity mask), its CPU quota and memory limit from
# the cgroup (v2's files, else v1's), and what Python 3.13+ takes for os.cpu_count().
RESOURCE_PROBE = """
nproc > /opt/ml/model/nproc
if [ -f /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max > /opt/ml/model/cpu.max
    cat /sys/fs/cgroup/memory.max > /opt/ml/model/memory.max
else cd /sys/fs/cgroup/cpu && echo "$(cat cpu.cfs_quota_us) $(cat cpu.cfs_period_us)" > /opt/ml/model/cpu.max
    cat /sys/fs/cgroup/memory/memory.limit_in_bytes > /opt/ml/model/memory.max; fi
echo "$PYTHON_CPU_COUNT" > /opt/ml/model/python-cpu-count
"""


def test_the_container_counts_its_instance_types_vcpus_and_has_its_memory(
    sagemaker, s3, bucket, shell_algo_image
):
    """ml.m5.large has 2 vCPUs and 8 GiB (capacity/instance_types.py, AWS's figures); a node with
    fewer gives all it has (runtime/cpusets.py)."""
    name = unique_name("resources")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, RESOURCE_PROBE))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    cpus = min(2, os.cpu_count())
    memory = min(8 * 1024**3, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    assert model["nproc"] == model["python-cpu-count"] == f"{cpus}\n".encode()
    assert model["cpu.max"] == f"{cpus * 100000} 100000\n".encode()
    assert model["memory.max"] == f"{memory}\n".encode()


def test_waiter_returns_when_the_job_completes(sagemaker, bucket, shell_algo_image):
    name = unique_name("waiter")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo hi > /opt/ml/model/m"))
    sagemaker.get_waiter("training_job_completed_or_stopped").wait(
        TrainingJobName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "Completed"


def test_uncompressed_output_uploads_model_files_under_the_model_prefix(
    sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("nocompress")
    script = "mkdir -p /opt/ml/model/sub && echo w > /opt/ml/model/weights && echo s > /opt/ml/model/sub/x"
    request = shell_job(name, shell_algo_image, bucket, script)
    request["OutputDataConfig"]["CompressionType"] = "NONE"
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["ModelArtifacts"]["S3ModelArtifacts"] == f"s3://{bucket}/output/{name}/output/model/"
    prefix = f"output/{name}/output/model/"
    keys = sorted(item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"])
    assert keys == [f"{prefix}sub/x", f"{prefix}weights"]
    assert s3.get_object(Bucket=bucket, Key=f"{prefix}weights")["Body"].read() == b"w\n"


def test_entrypoint_and_arguments_override_the_image(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("override")
    request = training_request(name, shell_algo_image, bucket)
    request["AlgorithmSpecification"]["ContainerEntrypoint"] = ["/bin/sh", "-c"]
    request["AlgorithmSpecification"]["ContainerArguments"] = ['echo "custom $0" > /opt/ml/model/out', "arg0"]
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"out": b"custom arg0\n"}


def test_network_isolation_leaves_the_container_without_a_network(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("isolated")
    script = "ls /sys/class/net > /opt/ml/model/interfaces"
    sagemaker.create_training_job(
        **shell_job(name, shell_algo_image, bucket, script, EnableNetworkIsolation=True)
    )

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["EnableNetworkIsolation"] is True
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")["interfaces"].split() == [b"lo"]


def test_python_example_trains_a_real_model_from_s3_data(sagemaker, s3, bucket, python_image):
    rows = "\n".join(f"{x},{2 * x + 1}" for x in range(20))
    s3.put_object(Bucket=bucket, Key="linear/train.csv", Body=rows.encode())
    name = unique_name("linear")
    request = training_request(
        name,
        python_image,
        bucket,
        InputDataConfig=[
            {
                "ChannelName": "train",
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/linear/"}},
            }
        ],
    )
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name, timeout=180)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = json.loads(read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")["model.json"])
    assert model["rows"] == 20
    assert model["coefficients"] == [pytest.approx(2.0)]
    assert model["intercept"] == pytest.approx(1.0)


# Prints the container's memory limit (bytes) and CPU quota (CPUs), under cgroup v1 or v2.
CGROUP_LIMITS_PROBE = """
if [ -f /sys/fs/cgroup/memory.max ]; then
  cat /sys/fs/cgroup/memory.max > /opt/ml/model/memory
  set -- $(cat /sys/fs/cgroup/cpu.max); echo "$1 $2" > /opt/ml/model/cpu
else
  cat /sys/fs/cgroup/memory/memory.limit_in_bytes > /opt/ml/model/memory
  cd /sys/fs/cgroup/cpu && echo "$(cat cpu.cfs_quota_us) $(cat cpu.cfs_period_us)" > /opt/ml/model/cpu
fi
"""


def test_container_gets_the_cpu_and_memory_of_its_instance_type(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("limits")
    request = shell_job(name, shell_algo_image, bucket, CGROUP_LIMITS_PROBE)
    request["ResourceConfig"]["InstanceType"] = "ml.m5.large"  # 2 vCPUs, 8 GiB
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert int(model["memory"]) == 8 * 1024**3
    quota, period = (int(value) for value in model["cpu"].split())
    assert quota / period == min(2, os.cpu_count())
