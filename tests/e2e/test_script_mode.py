"""Script mode with the real SageMaker SDKs and the real sagemaker-training toolkit (an image built
locally, empty /opt/ml/code, as the framework images ship), configured only by the stack's env
file: the user's code travels through S3 and the toolkit fetches and runs it.

Which path needs what: with `enable_network_isolation` the SDK passes the code as a `code`
channel (staged by the platform), so the container needs no S3; without it the toolkit
downloads `sourcedir.tar.gz` from S3 itself, with the credentials and S3 endpoint the platform
gives the container. SDK v3's ModelTrainer always passes code and drivers as channels."""
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

from sagemaker.estimator import Estimator
from sagemaker.model import Model

from tests.conftest import read_env_file
from tests.e2e.conftest import read_tar_gz, unique_name
from tests.e2e.sdk import ROLE, WatchedOutput

CODE_DIR = Path(__file__).parent / "script_mode"


def script_estimator(session, image: str, **options) -> Estimator:
    return Estimator(
        entry_point="train.py",
        source_dir=str(CODE_DIR),
        image_uri=image,
        role=ROLE,
        instance_type="ml.m5.large",
        hyperparameters={"lr": 0.5},
        sagemaker_session=session,
        **{"instance_count": 1, **options},
    )


def model_reports(stack, model_uri: str) -> dict[str, dict]:
    """The reports train.py left in the job's model.tar.gz, by host."""
    bucket, key = model_uri.removeprefix("s3://").split("/", 1)
    members = read_tar_gz(stack.client("s3"), bucket, key)
    return {name.removesuffix(".json"): json.loads(body) for name, body in members.items()}


def test_fit_with_logs_runs_the_entry_point_the_toolkit_fetched_from_s3(
    stack, sdk_session, sagemaker, toolkit_image, monkeypatch
):
    estimator = script_estimator(sdk_session, toolkit_image)
    output = WatchedOutput("training on algo-1 with lr=0.5")
    monkeypatch.setattr(sys, "stdout", output)

    estimator.fit(logs=True)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["HyperParameters"]["sagemaker_submit_directory"].startswith('"s3://')
    assert output.printed.is_set(), output.text
    assert model_reports(stack, estimator.model_data)["algo-1"]["lr"] == 0.5


def test_the_toolkit_runs_under_network_isolation_and_attach_finds_the_job_and_its_metrics(
    stack, sdk_session, sagemaker, toolkit_image
):
    """No network at all: the code comes as a channel, and the toolkit, which resolves every host
    before it runs the script, finds algo-1 in /etc/hosts."""
    loss = [{"Name": "train:loss", "Regex": r"loss=([0-9.]+)"}]
    estimator = script_estimator(
        sdk_session, toolkit_image, enable_network_isolation=True, metric_definitions=loss
    )

    estimator.fit(logs=False)

    name = estimator.latest_training_job.name
    job = sagemaker.describe_training_job(TrainingJobName=name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    code_in_channel = '"/opt/ml/input/data/code/sourcedir.tar.gz"'
    assert job["HyperParameters"]["sagemaker_submit_directory"] == code_in_channel
    report = model_reports(stack, estimator.model_data)["algo-1"]
    assert report["addresses"] == {"algo-1": "127.0.0.1"}

    attached = Estimator.attach(name, sagemaker_session=sdk_session)

    assert attached.model_data == estimator.model_data
    assert attached.enable_network_isolation() is True
    assert attached.output_kms_key == ""
    frame = attached.training_job_analytics.dataframe()  # CloudWatch's GetMetricStatistics
    assert frame[["metric_name", "value"]].values.tolist() == [["train:loss", 0.25]]


def test_two_instances_complete_when_algo_1_ends_long_before_algo_2_looks_it_up(
    stack, sdk_session, sagemaker, toolkit_image
):
    estimator = script_estimator(
        sdk_session, toolkit_image, instance_count=2, enable_network_isolation=True,
        environment={"ALGO_1_ENDS_FIRST": "1"},
    )

    estimator.fit(logs=False)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    reports = model_reports(stack, estimator.model_data)
    assert set(reports) == {"algo-1", "algo-2"}
    # algo-2 looked algo-1 up after algo-1's container was gone: the same fixed address.
    assert reports["algo-2"]["addresses"] == reports["algo-1"]["addresses"]
    assert len(set(reports["algo-2"]["addresses"].values())) == 2


def test_an_inference_model_with_an_entry_point_is_repacked_with_its_code(
    stack, sdk_session, sagemaker, tmp_path
):
    bucket = sdk_session.default_bucket()
    archive = tmp_path / "model.tar.gz"
    (tmp_path / "weights.txt").write_text("0.25")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "weights.txt", arcname="weights.txt")
    prefix = unique_name("repack")
    stack.client("s3").upload_file(str(archive), bucket, f"{prefix}/model.tar.gz")
    name = unique_name("repacked")
    model = Model(
        image_uri="sageport-examples/python-serve:latest",
        model_data=f"s3://{bucket}/{prefix}/model.tar.gz",
        entry_point="inference.py",
        source_dir=str(CODE_DIR),
        role=ROLE,
        name=name,
        sagemaker_session=sdk_session,
    )

    model.create(instance_type="ml.m5.large")

    repacked = sagemaker.describe_model(ModelName=name)["PrimaryContainer"]["ModelDataUrl"]
    assert repacked != f"s3://{bucket}/{prefix}/model.tar.gz"
    repacked_bucket, key = repacked.removeprefix("s3://").split("/", 1)
    members = read_tar_gz(stack.client("s3"), repacked_bucket, key)
    assert members["weights.txt"] == b"0.25"
    assert members["code/inference.py"] == (CODE_DIR / "inference.py").read_bytes()


SDK_V3_SCRIPT = textwrap.dedent("""
    import sys
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute, SourceCode

    trainer = ModelTrainer(
        training_image=sys.argv[1],
        source_code=SourceCode(source_dir=sys.argv[2], entry_script="train.py"),
        compute=Compute(instance_type="ml.m5.large", instance_count=1),
        hyperparameters={"lr": 0.25},
        role=sys.argv[3],
    )
    trainer.train(wait=True, logs=False)
    print(trainer._latest_training_job.training_job_name)
""")


def test_sdk_v3_model_trainer_with_source_code_completes(
    stack, sagemaker, toolkit_image, sdk_v3_python, tmp_path
):
    """ModelTrainer's command `chmod +x`es its driver in /opt/ml/input/data/sm_drivers: the input
    tree is writable, as on SageMaker."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sdk_v3_python, "-c", SDK_V3_SCRIPT, toolkit_image, str(CODE_DIR), ROLE],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    name = result.stdout.split()[-1]
    job = sagemaker.describe_training_job(TrainingJobName=name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert model_reports(stack, job["ModelArtifacts"]["S3ModelArtifacts"])["algo-1"]["lr"] == 0.25
