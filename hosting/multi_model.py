"""Multi-model containers (CreateModel's `PrimaryContainer.Mode: MultiModel`): what CreateModel
accepts for them, where their models live on the host, and how one target model is staged there.

SageMaker's contract for such a container ("Custom Containers Contract for Multi-Model
Endpoints"): it starts with no model loaded, its models directory /opt/ml/models is mounted, and
the platform manages models over HTTP: `POST /models` {"model_name", "url"} loads the model
unpacked at `url` (/opt/ml/models/<model_name>/model), `POST /models/<model_name>/invoke` serves
a request, `DELETE /models/<model_name>` unloads it (hosting/runtime_api/multi_model.py calls them).

`ModelDataUrl` is an S3 prefix; an InvokeEndpoint's `TargetModel` names a `.tar.gz` key relative
to it. The data plane stages a target model on first use: downloaded with the model's account's
rights (accounts/s3_tenancy) and unpacked with tar-slip protection and the size limit of any
model data (hosting/model_data.py), into the deployment's models directory, which every container
of the deployment mounts read-only at /opt/ml/models. A model is staged once per deployment and
node; containers load it from there."""

import contextlib
import fcntl
import hashlib
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from accounts import s3_tenancy
from storage.archives import ArchiveError, safe_extract
from storage.s3 import ByteBudget, StorageError, download_many, object_size

MODE = "MultiModel"
CONTAINER_MODELS_DIR = "/opt/ml/models"
# Set in a multi-model container's environment, as the SageMaker inference toolkit expects.
ENVIRONMENT = {"SAGEMAKER_MULTI_MODEL": "true"}

class TargetModelMissing(Exception):
    """No object at the prefix + TargetModel (or the model's account may not read it)."""


class TargetModelUnusable(Exception):
    """The object is there but cannot be staged (not a safe archive, too large)."""


def _named(prefix_uri: str, target_model: str) -> tuple[str, str]:
    """(bucket, key) as the error names them; never used to read (s3_tenancy.location is)."""
    bucket, _, prefix = prefix_uri.removeprefix("s3://").partition("/")
    return bucket, prefix + target_model


def is_multi_model(definition: dict) -> bool:
    return definition.get("Mode") == MODE


def container_problems(container: dict) -> list[str]:
    """CreateModel's rules for a MultiModel container: an Image and a ModelDataUrl that is an S3
    prefix; MultiModelConfig's ModelCacheSetting may only be Enabled (the default)."""
    problems = []
    if not container.get("Image"):
        problems.append("The container's Image is required.")
    if "ModelDataSource" in container:
        problems.append("A MultiModel container takes ModelDataUrl (an S3 prefix), not ModelDataSource.")
    url = container.get("ModelDataUrl")
    if url is None:
        problems.append("A MultiModel container needs ModelDataUrl: the S3 prefix of its models.")
    elif not (url.startswith("s3://") and url.endswith("/")):
        problems.append(
            f"A MultiModel container's ModelDataUrl must be an s3:// prefix ending with '/', got '{url}'."
        )
    if container.get("MultiModelConfig", {}).get("ModelCacheSetting") == "Disabled":
        problems.append(
            "MultiModelConfig ModelCacheSetting Disabled is not supported by Sageport: models stay cached."
        )
    return problems


def container_model_name(target_model: str) -> str:
    """The opaque `model_name` the container is given for a TargetModel (the contract lets it be
    anything; a digest is a safe directory name whatever the key holds)."""
    return hashlib.sha256(target_model.encode()).hexdigest()[:32]


def model_url(model_name: str) -> str:
    """The `url` of the load request: where the container sees the model's files."""
    return f"{CONTAINER_MODELS_DIR}/{model_name}/model"


def stage(account_id: str, prefix_uri: str, target_model: str, models_dir: Path) -> Path:
    """Make `<models_dir>/<model_name>/model` hold the unpacked `<prefix><target_model>`, once
    (concurrent callers, in any serving process, wait for the first). Raises TargetModelMissing,
    TargetModelUnusable, or StorageError when the store is away."""
    model_dir = models_dir / container_model_name(target_model)
    with _staging_lock(model_dir):
        if (model_dir / "staged").exists():
            return model_dir
        try:
            bucket, prefix = s3_tenancy.location(account_id, prefix_uri)
        except s3_tenancy.ForeignLocation:  # another account's bucket: as if nothing were there
            raise TargetModelMissing(*_named(prefix_uri, target_model)) from None
        key = prefix + target_model  # not parsed as a URI: a '#' or '?' in the key is the key's
        if object_size(bucket, key) is None:
            raise TargetModelMissing(bucket, key)
        shutil.rmtree(model_dir, ignore_errors=True)
        model_dir.mkdir(parents=True)
        _unpack(bucket, key, model_dir)
        (model_dir / "staged").touch()
        return model_dir


def _unpack(bucket: str, key: str, model_dir: Path) -> None:
    limit = settings.SAGEPORT_MAX_MODEL_DATA_BYTES
    budget = ByteBudget(limit, f"the model holds more than {limit} bytes (SAGEPORT_MAX_MODEL_DATA_BYTES)")
    with tempfile.TemporaryDirectory(dir=model_dir) as scratch:
        archive = Path(scratch) / "model.tar.gz"
        try:
            download_many([(bucket, key, archive)], budget)
            safe_extract(archive, model_dir / "model", limit)
        except ArchiveError as error:
            raise TargetModelUnusable(f"Could not unpack s3://{bucket}/{key}: {error}") from None
        except StorageError as error:
            if error.transient:
                raise
            raise TargetModelUnusable(f"Could not download s3://{bucket}/{key}: {error}") from None


@contextlib.contextmanager
def _staging_lock(model_dir: Path):
    """A file lock: the serving processes (threads and processes alike) stage a model once."""
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(model_dir.with_suffix(".lock"), "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
