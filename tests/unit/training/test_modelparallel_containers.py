"""What a job that enables model parallelism or MPI gets in its containers (training/modelparallel)."""
import json
import subprocess
import sys

import pytest

from runtime.base import Mount
from tests.unit.training.test_scheduler import make_job, make_node
from training import containers, modelparallel, scheduler

MP_PARAMETERS = json.dumps({"partitions": 2, "microbatches": 4})


def spec_of(**hyperparameters):
    make_node(gpus=0, cpus=8, memory_gib=32)
    job = make_job("ml.m5.large", count=2, HyperParameters=hyperparameters)
    scheduler.place(job)
    return containers.spec_for(job, "algo-2")


def test_a_model_parallel_job_gets_the_library_read_only_on_its_python_path(db):
    spec = spec_of(mp_parameters=MP_PARAMETERS, sagemaker_mpi_enabled="true")
    library = [mount for mount in spec.mounts if mount.container_path == modelparallel.LIBRARY_CONTAINER_PATH]
    assert library == [Mount(library[0].host_path, modelparallel.LIBRARY_CONTAINER_PATH, read_only=True)]
    assert spec.python_paths == (modelparallel.LIBRARY_CONTAINER_PATH,)
    assert spec.ssh_server is True


@pytest.mark.parametrize(
    "hyperparameters", [{}, {"mp_parameters": "{}"}, {"mp_parameters": ""}, {"lr": "0.1"}]
)
def test_a_job_without_model_parallelism_gets_no_library(db, hyperparameters):
    spec = spec_of(**hyperparameters)
    assert modelparallel.LIBRARY_CONTAINER_PATH not in [mount.container_path for mount in spec.mounts]
    assert spec.python_paths == ()
    assert spec.ssh_server is False


@pytest.mark.parametrize(
    "value, expected", [("true", True), ('"true"', True), ("True", True), ("false", False)]
)
def test_only_an_mpi_job_runs_sshd(db, value, expected):
    assert spec_of(sagemaker_mpi_enabled=value).ssh_server is expected


def test_the_mounted_copy_is_the_library_and_is_made_once(db, tmp_path, settings):
    settings.DATA_DIR = tmp_path
    first = modelparallel.library_mount().host_path
    assert modelparallel.library_mount().host_path == first
    assert [path.name for path in (tmp_path / "libraries").iterdir()] == [first.rsplit("/", 1)[1]]
    probe = "import smdistributed.modelparallel.torch as smp; print(smp.__file__)"
    found = subprocess.run(
        [sys.executable, "-c", probe], env={"PYTHONPATH": first}, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == f"{first}/smdistributed/modelparallel/torch/__init__.py"


def test_an_image_with_its_own_library_keeps_it(tmp_path):
    """Sageport's copy comes first on PYTHONPATH, yet an installation elsewhere on the path wins."""
    own = tmp_path / "image-site" / "smdistributed" / "modelparallel" / "torch"
    own.mkdir(parents=True)
    (own.parent.parent / "__init__.py").write_text("")
    (own.parent / "__init__.py").write_text("")
    (own / "__init__.py").write_text("AWS = True\n")
    ours = modelparallel.LIBRARY_SOURCE
    probe = "import smdistributed.modelparallel.torch as smp; print(smp.AWS)"
    found = subprocess.run(
        [sys.executable, "-c", probe], env={"PYTHONPATH": f"{ours}:{tmp_path / 'image-site'}"},
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert found == "True"
