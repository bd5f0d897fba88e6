"""The shared layer of container jobs keeps two kinds of job apart and keeps SageMaker's container
contract for either: a processing job and a training job with the same id and name never share
a container, a network, a workspace or a log stream; `docker run IMAGE` runs the image's own
command unless the feature has a default (training's `train`), as SageMaker documents for
training ("How Amazon SageMaker Runs Your Training Image") and processing ("How Amazon SageMaker
Processing Runs Your Processing Container Image")."""
from datetime import UTC, datetime

from accounts.s3_tenancy import S3Location
from jobs import identity, outputs
from jobs.containers import command
from jobs.identity import JobIdentity, JobKind
from runtime import labels

TRAINING = JobKind("train", labels.TRAINING_ROLE, "jobs", "/aws/sagemaker/TrainingJobs", "training-job")
PROCESSING = JobKind(
    "processing", "processing", "processing-jobs", "/aws/sagemaker/ProcessingJobs", "processing-job"
)


def job(kind: JobKind) -> JobIdentity:
    arn = f"arn:aws:sagemaker:us-east-1:111122223333:{kind.resource_type}/same-name"
    created = datetime(2026, 11, 27, tzinfo=UTC)
    return JobIdentity(kind, 7, "same-name", arn, "111122223333", "us-east-1", created)


def test_two_kinds_with_the_same_id_and_name_share_nothing(settings, tmp_path):
    settings.DATA_DIR = str(tmp_path)
    training, processing = job(TRAINING), job(PROCESSING)

    assert identity.container_name(training, "algo-1") != identity.container_name(processing, "algo-1")
    assert identity.network_name(TRAINING, 7) != identity.network_name(PROCESSING, 7)
    assert identity.job_root(training) != identity.job_root(processing)
    assert identity.job_labels(training)[labels.ROLE] != identity.job_labels(processing)[labels.ROLE]


def test_training_names_keep_their_form(settings):
    settings.SAGEPORT_STACK_ID = "s1"
    assert identity.container_name(job(TRAINING), "algo-2") == "sageport-s1-train-7-algo-2"


def test_the_image_command_is_kept_unless_the_feature_has_a_default():
    assert command(None, None, default=None) == (None, None)  # processing: docker run IMAGE
    assert command(None, None, default=["train"]) == (None, ["train"])
    assert command(["python3", "x.py"], None, default=["train"]) == (["python3", "x.py"], [])
    assert command(["python3"], ["a"], default=None) == (["python3"], ["a"])


def test_files_uploaded_as_they_are_land_under_the_prefix_or_the_bucket_root(monkeypatch, tmp_path):
    uploads = []
    monkeypatch.setattr(outputs.s3, "upload_tree", lambda root, bucket, prefix: uploads.append(prefix) or 0)

    outputs.upload_files([tmp_path], S3Location("b", "out/job/output"), "model")
    outputs.upload_files([tmp_path], S3Location("b", "processed"))
    outputs.upload_files([tmp_path], S3Location("b", ""))

    assert uploads == ["out/job/output/model", "processed", ""]
