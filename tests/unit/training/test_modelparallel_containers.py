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


SCRIPT_MODE = {"sagemaker_program": '"train.py"'}


def test_a_model_parallel_job_gets_the_library_read_only_on_its_python_path(db):
    spec = spec_of(mp_parameters=MP_PARAMETERS, sagemaker_mpi_enabled="true", **SCRIPT_MODE)
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
def test_only_an_mpi_job_in_script_mode_runs_sshd_for_the_toolkits_mpirun(db, value, expected):
    spec = spec_of(sagemaker_mpi_enabled=value, **SCRIPT_MODE)
    assert (spec.ssh_server, spec.launcher) == (expected, ())


def test_sageport_launches_an_mpi_job_without_the_toolkit_under_torchrun(db):
    spec = spec_of(sagemaker_mpi_enabled="true", sagemaker_mpi_num_of_processes_per_host="3")
    assert spec.ssh_server is False
    assert spec.launcher == (
        "torchrun", "--no-python", "--nnodes=2", "--nproc_per_node=3", "--node_rank=1",
        "--master_addr=algo-1", "--master_port=29500",
    )


def test_processes_sageport_launches_get_what_the_toolkit_would_have_told_them(db):
    spec = spec_of(sagemaker_mpi_enabled="true", mp_parameters=MP_PARAMETERS)
    assert json.loads(spec.environment["SM_HP_MP_PARAMETERS"]) == json.loads(MP_PARAMETERS)
    assert (json.loads(spec.environment["SM_HOSTS"]), spec.environment["SM_CURRENT_HOST"]) == (
        ["algo-1", "algo-2"], "algo-2"
    )
    script_mode = {"HyperParameters": {"sagemaker_mpi_enabled": "true", **SCRIPT_MODE}}
    assert modelparallel.launch_environment(script_mode, ["algo-1"], "algo-1") == {}  # the toolkit's job


def test_without_a_process_count_torchrun_starts_one_per_gpu_else_one(db):
    assert "--nproc_per_node=1" in spec_of(sagemaker_mpi_enabled="true").launcher
    request = {"HyperParameters": {"sagemaker_mpi_enabled": "true"}}
    assert "--nproc_per_node=4" in modelparallel.launcher(request, ["algo-1"], "algo-1", gpu_count=4)


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
