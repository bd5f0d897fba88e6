"""Model-parallel jobs, 2 instances x 2 processes, running a script written against the seed's
common API on an image with PyTorch but no smdistributed library (Sageport provides its own); the
model is split in P = 2 partitions, and each rank reports the parameter bytes it holds into the
job's output:
- as SageMaker users write it, the SDK v2 PyTorch estimator with the `smdistributed` + `mpi`
  distribution on an image with the training toolkit, OpenMPI and sshd: the toolkit starts sshd
  on both instances and runs mpirun from algo-1 over SSH across the job's network;
- with boto3 and the image's own entrypoint (no toolkit in play): Sageport starts the processes
  itself under torchrun."""
import json
from pathlib import Path

from sagemaker.pytorch import PyTorch

from tests.e2e.conftest import read_tar_gz, training_request, unique_name, wait_for_status
from tests.e2e.sdk import ROLE

CODE_DIR = Path(__file__).parent / "modelparallel"
MP_PARAMETERS = {"partitions": 2, "microbatches": 4, "placement_strategy": "cluster", "ddp": True}
DISTRIBUTION = {
    "smdistributed": {"modelparallel": {"enabled": True, "parameters": MP_PARAMETERS}},
    "mpi": {"enabled": True, "processes_per_host": 2},
}


# mpirun's slots and torchrun's node ranks both fill algo-1 first; cluster placement:
# mp_rank = rank % 2, dp_rank = rank // 2.
EXPECTED_LAYOUT = [
    ("algo-1", 0, 0, 0, 0),
    ("algo-1", 1, 1, 1, 0),
    ("algo-2", 2, 0, 0, 1),
    ("algo-2", 3, 1, 1, 1),
]
LIBRARY = "/opt/sageport/libraries/smdistributed-modelparallel/smdistributed/modelparallel/torch/__init__.py"


def assert_four_ranks_on_two_hosts(s3, model_uri: str) -> None:
    bucket, key = model_uri.removeprefix("s3://").split("/", 1)
    reports = json.loads(read_tar_gz(s3, bucket, key)["ranks.json"])
    layout = [(r["host"], r["rank"], r["local_rank"], r["mp_rank"], r["dp_rank"]) for r in reports]
    assert layout == EXPECTED_LAYOUT
    assert {(r["size"], r["mp_size"], r["dp_size"], r["local_size"]) for r in reports} == {(4, 2, 2, 2)}
    assert len({r["loss"] for r in reports}) == 1  # one loss, reduced over the same global batch
    assert {r["library"] for r in reports} == {LIBRARY}
    assert_each_rank_holds_its_partition(reports)


def assert_each_rank_holds_its_partition(reports) -> None:
    """P = 2: each rank holds at most 1.1/P of the model's parameter bytes (the issue's goal), and
    the two ranks of an MP group hold all of it between them."""
    model_bytes = reports[0]["model_bytes"]
    for report in reports:
        assert report["parameter_bytes"] <= 1.1 * model_bytes / MP_PARAMETERS["partitions"], report
    for replica in (reports[:2], reports[2:]):  # cluster placement: MP groups [0, 1] and [2, 3]
        assert sum(r["parameter_bytes"] for r in replica) >= model_bytes


def test_the_sdks_model_parallel_job_runs_four_ranks_on_two_instances_over_mpirun(
    stack, sdk_session, sagemaker, pytorch_mpi_image
):
    estimator = PyTorch(
        entry_point="train.py",
        source_dir=str(CODE_DIR),
        image_uri=pytorch_mpi_image,
        role=ROLE,
        instance_count=2,
        instance_type="ml.m5.large",
        distribution=DISTRIBUTION,
        sagemaker_session=sdk_session,
    )

    estimator.fit(logs=False)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert_four_ranks_on_two_hosts(stack.client("s3"), estimator.model_data)


def test_a_boto3_job_without_the_toolkit_is_launched_by_sageport_under_torchrun(
    sagemaker, s3, bucket, pytorch_mpi_image
):
    s3.put_object(Bucket=bucket, Key="mp-code/train.py", Body=(CODE_DIR / "train.py").read_bytes())
    name = unique_name("mp-torchrun")
    request = training_request(
        name, pytorch_mpi_image, bucket,
        HyperParameters={
            "sagemaker_mpi_enabled": "true",
            "sagemaker_mpi_num_of_processes_per_host": "2",
            "mp_parameters": json.dumps(MP_PARAMETERS),
        },
        InputDataConfig=[{
            "ChannelName": "code",
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/mp-code/"}},
        }],
    )
    request["AlgorithmSpecification"]["ContainerEntrypoint"] = ["python3", "/opt/ml/input/data/code/train.py"]
    request["ResourceConfig"]["InstanceCount"] = 2
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name, timeout=300)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert_four_ranks_on_two_hosts(s3, job["ModelArtifacts"]["S3ModelArtifacts"])
