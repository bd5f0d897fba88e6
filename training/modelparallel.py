"""What a job that enables SageMaker's model-parallel library or MPI gets in its containers.

The SageMaker SDK says so in the hyperparameters it sends (JSON-encoded values): `mp_parameters`
(a JSON object, `{}` or absent when model parallelism is off, as the training toolkit reads it)
and `sagemaker_mpi_enabled` (`true`: the toolkit starts sshd on every instance and runs
`mpirun` over all of them from algo-1).

- Model parallelism: Sageport's own `smdistributed.modelparallel.torch`
  (`libraries/smdistributed-modelparallel`) is mounted read-only and appended to PYTHONPATH;
  an image that ships AWS's own library keeps using it (the package defers to it).
- MPI: the containers run sshd, which needs two capabilities the others never get
  (runtime/docker.py, SSH_SERVER_CAPABILITIES).
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
