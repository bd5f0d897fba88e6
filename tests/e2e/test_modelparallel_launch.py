"""A model-parallel job as SageMaker users write it: the SDK v2 PyTorch estimator with the
`smdistributed` + `mpi` distribution, 2 instances x 2 processes, on an image with the training
toolkit, PyTorch, OpenMPI and sshd (no smdistributed library: Sageport provides its own). The
toolkit starts sshd on both instances and runs mpirun from algo-1 over SSH across the job's
network; the script uses the seed's common API."""
import json
from pathlib import Path

from sagemaker.pytorch import PyTorch

from tests.e2e.conftest import read_tar_gz
from tests.e2e.sdk import ROLE

CODE_DIR = Path(__file__).parent / "modelparallel"
DISTRIBUTION = {
    "smdistributed": {
        "modelparallel": {
            "enabled": True,
            "parameters": {"partitions": 2, "microbatches": 4, "placement_strategy": "cluster", "ddp": True},
        }
    },
    "mpi": {"enabled": True, "processes_per_host": 2},
}


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
    bucket, key = estimator.model_data.removeprefix("s3://").split("/", 1)
    reports = json.loads(read_tar_gz(stack.client("s3"), bucket, key)["ranks.json"])
    # mpirun's slots fill algo-1 first; cluster placement: mp_rank = rank % 2, dp_rank = rank // 2.
    assert [(r["host"], r["rank"], r["local_rank"], r["mp_rank"], r["dp_rank"]) for r in reports] == [
        ("algo-1", 0, 0, 0, 0),
        ("algo-1", 1, 1, 1, 0),
        ("algo-2", 2, 0, 0, 1),
        ("algo-2", 3, 1, 1, 1),
    ]
    assert {(r["size"], r["mp_size"], r["dp_size"], r["local_size"]) for r in reports} == {(4, 2, 2, 2)}
    assert len({r["loss"] for r in reports}) == 1  # one loss, reduced over the same global batch
    assert {r["library"] for r in reports} == {
        "/opt/sageport/libraries/smdistributed-modelparallel/smdistributed/modelparallel/torch/__init__.py"
    }
