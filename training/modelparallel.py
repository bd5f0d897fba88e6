"""What a job that enables SageMaker's model-parallel library or MPI gets in its containers.

The SageMaker SDK says so in the hyperparameters it sends (JSON-encoded values): `mp_parameters`
(a JSON object, `{}` or absent when model parallelism is off, as the training toolkit reads it)
and `sagemaker_mpi_enabled` (`true`: `sagemaker_mpi_num_of_processes_per_host` processes on every
instance, ranks filling algo-1 first).

Who starts those processes:
- script mode (`sagemaker_program`: the image runs the SageMaker training toolkit): the toolkit,
  as on SageMaker: it starts sshd on every instance and runs `mpirun` over all of them from
  algo-1. The containers then run sshd, which needs two capabilities the others never get
  (runtime/docker.py, SSH_SERVER_CAPABILITIES).
- otherwise (an image of the user's own, nothing in it that would launch them): Sageport, by
  running the container's entrypoint under `torchrun --no-python` with a static rendezvous on
  algo-1, which gives each process RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
  MASTER_PORT in the same layout as mpirun's (`rank = host index * processes per host + local
  rank`). The image must have torch (a model-parallel job's does). The processes also get the
  variables the toolkit would have given them for this (`launch_environment`).

- Model parallelism: Sageport's own `smdistributed.modelparallel.torch`
  (`libraries/smdistributed-modelparallel`) is mounted read-only and appended to PYTHONPATH;
  an image that ships AWS's own library keeps using it (the package defers to it).
"""

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from runtime.base import Mount

LIBRARY_NAME = "smdistributed-modelparallel"
LIBRARY_SOURCE = Path(settings.BASE_DIR) / "libraries" / LIBRARY_NAME
LIBRARY_CONTAINER_PATH = f"/opt/sageport/libraries/{LIBRARY_NAME}"
MP_PARAMETERS = "mp_parameters"
MPI_ENABLED = "sagemaker_mpi_enabled"
PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
SCRIPT_MODE_PROGRAM = "sagemaker_program"
TORCHRUN_MASTER_PORT = 29500


def _hyperparameter(request: dict, name: str):
    """The decoded value (the SDKs JSON-encode every hyperparameter), or the raw string."""
    raw = (request.get("HyperParameters") or {}).get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def modelparallel_enabled(request: dict) -> bool:
    return bool(_hyperparameter(request, MP_PARAMETERS))  # absent, "" and {} all mean off


def mpi_enabled(request: dict) -> bool:
    return str(_hyperparameter(request, MPI_ENABLED)).lower() == "true"


def runs_sshd(request: dict) -> bool:
    """The toolkit's mpirun reaches the other instances over SSH."""
    return mpi_enabled(request) and _hyperparameter(request, SCRIPT_MODE_PROGRAM) is not None


def launcher(request: dict, hosts: list[str], host: str, gpu_count: int) -> tuple[str, ...]:
    """What Sageport runs the entrypoint under, when it starts the processes itself."""
    if not mpi_enabled(request) or runs_sshd(request):
        return ()
    return (
        "torchrun", "--no-python",
        f"--nnodes={len(hosts)}",
        f"--nproc_per_node={_processes_per_host(request, gpu_count)}",
        f"--node_rank={hosts.index(host)}",
        f"--master_addr={hosts[0]}",
        f"--master_port={TORCHRUN_MASTER_PORT}",
    )


def launch_environment(request: dict, hosts: list[str], host: str) -> dict[str, str]:
    """What the toolkit's environment says that a model-parallel script or library reads (the
    toolkit's encoding: JSON for what is not a string), when Sageport starts the processes."""
    if not launcher(request, hosts, host, gpu_count=0):
        return {}
    environment = {"SM_HOSTS": json.dumps(hosts), "SM_CURRENT_HOST": host}
    if modelparallel_enabled(request):
        environment["SM_HP_MP_PARAMETERS"] = json.dumps(_hyperparameter(request, MP_PARAMETERS))
    return environment


def _processes_per_host(request: dict, gpu_count: int) -> int:
    """As the toolkit decides it: the hyperparameter, else one per GPU, else one."""
    value = _hyperparameter(request, PROCESSES_PER_HOST)
    try:
        return max(int(value), 1)
    except (TypeError, ValueError):
        return max(gpu_count, 1)


def library_mount() -> Mount:
    """The library, read-only, from a copy in the data dir: bind-mount sources are resolved on
    the engine's host, and the data dir is the one path a worker in a container (compose)
    shares with it at the same absolute path, where the code's own directory is not."""
    return Mount(str(_library_copy()), LIBRARY_CONTAINER_PATH, read_only=True)


def _library_copy() -> Path:
    """`<data dir>/libraries/<name>-<digest>`, made once per version of the library's files; made
    in a temporary directory and renamed, so a container never mounts a half-made copy."""
    target = Path(settings.DATA_DIR) / "libraries" / f"{LIBRARY_NAME}-{_library_digest()}"
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
        shutil.copytree(LIBRARY_SOURCE / "smdistributed", staging / "smdistributed",
                        ignore=shutil.ignore_patterns("__pycache__"))
        try:
            staging.rename(target)
        except OSError:  # another worker made it first: theirs is the same files
            shutil.rmtree(staging)
    return target


def _library_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((LIBRARY_SOURCE / "smdistributed").rglob("*.py")):
        digest.update(str(path.relative_to(LIBRARY_SOURCE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
