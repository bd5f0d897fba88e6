"""The SageMaker Python SDK (v2)'s processors run unchanged against Sageport, pointed at it by the
stack's environment file alone: `Processor` (an image and its entrypoint) and `ScriptProcessor`
(the SDK uploads the script to S3 as a `code` input under /opt/ml/processing/input/code and runs
it with `command`), `SKLearnProcessor` and `FrameworkProcessor` (source_dir and runproc.sh), all
with `wait=True, logs=True`, which polls DescribeProcessingJob and
prints the job's CloudWatch stream (/aws/sagemaker/ProcessingJobs) as it goes."""
import os
import subprocess
import sys
import textwrap

import pytest
from sagemaker import image_uris
from sagemaker.processing import (
    FrameworkProcessor,
    ProcessingInput,
    ProcessingOutput,
    Processor,
    ScriptProcessor,
)
from sagemaker.sklearn.estimator import SKLearn
from sagemaker.sklearn.processing import SKLearnProcessor

from tests.conftest import read_env_file
from tests.e2e.sdk import ROLE, WatchedOutput

SKLEARN_VERSION = "1.2-1"


def test_processor_runs_its_image_with_inputs_and_outputs_and_prints_its_logs(
    sdk_session, s3, bucket, shell_algo_image, monkeypatch
):
    s3.put_object(Bucket=bucket, Key="in/rows.csv", Body=b"a,b\n")
    count_rows = "wc -l < /opt/ml/processing/input/rows.csv > /opt/ml/processing/output/n; echo done"
    processor = Processor(
        role=ROLE,
        image_uri=shell_algo_image,
        instance_count=1,
        instance_type="ml.m5.large",
        env={"ALGO_SCRIPT": count_rows},
        sagemaker_session=sdk_session,
    )
    output = WatchedOutput("done")
    monkeypatch.setattr(sys, "stdout", output)

    processor.run(
        inputs=[ProcessingInput(source=f"s3://{bucket}/in", destination="/opt/ml/processing/input")],
        outputs=[ProcessingOutput(source="/opt/ml/processing/output", destination=f"s3://{bucket}/sdk-out")],
        wait=True,
        logs=True,
    )

    job = processor.latest_job.describe()
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert output.printed.is_set(), output.text
    assert s3.get_object(Bucket=bucket, Key="sdk-out/n")["Body"].read() == b"1\n"


def test_script_processor_uploads_and_runs_its_code_with_the_command(
    sdk_session, s3, bucket, shell_algo_image, tmp_path, monkeypatch
):
    script = tmp_path / "preprocess.sh"
    script.write_text('echo "args: $*" > /opt/ml/processing/output/args.txt; echo script-ran\n')
    processor = ScriptProcessor(
        role=ROLE,
        image_uri=shell_algo_image,
        command=["sh"],
        instance_count=1,
        instance_type="ml.m5.large",
        sagemaker_session=sdk_session,
    )
    output = WatchedOutput("script-ran")
    monkeypatch.setattr(sys, "stdout", output)

    processor.run(
        code=str(script),
        outputs=[ProcessingOutput(source="/opt/ml/processing/output", destination=f"s3://{bucket}/script-out")],
        arguments=["--split", "0.2"],
        wait=True,
        logs=True,
    )

    job = processor.latest_job.describe()
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    code = "/opt/ml/processing/input/code/preprocess.sh"
    assert job["AppSpecification"]["ContainerEntrypoint"] == ["sh", code]
    assert output.printed.is_set(), output.text
    args = s3.get_object(Bucket=bucket, Key="script-out/args.txt")["Body"].read()
    assert args == b"args: --split 0.2\n"


@pytest.fixture
def sklearn_image(sdk_session, python_image):
    """The SDK's own scikit-learn image URI for the session's region, standing for the local python
    image (SKLearnProcessor takes no image_uri: it always names AWS's image)."""
    uri = image_uris.retrieve("sklearn", sdk_session.boto_region_name, SKLEARN_VERSION)
    subprocess.run(["docker", "tag", python_image, uri], check=True, capture_output=True)
    yield uri
    subprocess.run(["docker", "rmi", uri], check=False, capture_output=True)  # the tag only


def test_sklearn_processor_runs_a_python_script_in_its_image(
    sdk_session, s3, bucket, sklearn_image, tmp_path
):
    script = tmp_path / "prep.py"
    script.write_text(
        "import pathlib, sys\n"
        "rows = pathlib.Path('/opt/ml/processing/input/rows.csv').read_text().splitlines()\n"
        "pathlib.Path('/opt/ml/processing/train/rows.txt').write_text(f'{len(rows)} {sys.argv[1:]}')\n"
    )
    s3.put_object(Bucket=bucket, Key="sk/rows.csv", Body=b"1\n2\n3\n")
    processor = SKLearnProcessor(
        framework_version=SKLEARN_VERSION, role=ROLE, instance_type="ml.m5.large", instance_count=1,
        sagemaker_session=sdk_session,
    )

    processor.run(
        code=str(script),
        inputs=[ProcessingInput(source=f"s3://{bucket}/sk", destination="/opt/ml/processing/input")],
        outputs=[ProcessingOutput(source="/opt/ml/processing/train", destination=f"s3://{bucket}/sk-out")],
        arguments=["--test-size", "0.2"],
        wait=True,
        logs=True,
    )

    job = processor.latest_job.describe()
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["AppSpecification"]["ImageUri"] == sklearn_image
    body = s3.get_object(Bucket=bucket, Key="sk-out/rows.txt")["Body"].read()
    assert body == b"3 ['--test-size', '0.2']"


def test_framework_processor_unpacks_its_source_dir_and_runs_the_entry_point(
    sdk_session, s3, bucket, python_image, tmp_path
):
    """FrameworkProcessor uploads source_dir as sourcedir.tar.gz and a runproc.sh (bash) that
    unpacks it under /opt/ml/processing/input/code and runs `command` with the code."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "helpers.py").write_text("GREETING = 'from the source dir'\n")
    (source / "main.py").write_text(
        "import pathlib, helpers\n"
        "pathlib.Path('/opt/ml/processing/out/greeting.txt').write_text(helpers.GREETING)\n"
    )
    processor = FrameworkProcessor(
        estimator_cls=SKLearn, framework_version=SKLEARN_VERSION, image_uri=python_image, command=["python3"],
        role=ROLE, instance_type="ml.m5.large", instance_count=1, sagemaker_session=sdk_session,
    )

    processor.run(
        code="main.py",
        source_dir=str(source),
        outputs=[ProcessingOutput(source="/opt/ml/processing/out", destination=f"s3://{bucket}/fw-out")],
        wait=True,
        logs=True,
    )

    job = processor.latest_job.describe()
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert s3.get_object(Bucket=bucket, Key="fw-out/greeting.txt")["Body"].read() == b"from the source dir"


SDK_V3_SCRIPT = textwrap.dedent("""
    import sys
    from sagemaker.core.processing import Processor
    from sagemaker.core.shapes import ProcessingOutput, ProcessingS3Output

    image, role, destination = sys.argv[1:4]
    processor = Processor(
        role=role, image_uri=image, instance_count=1, instance_type="ml.m5.large",
        env={"ALGO_SCRIPT": "echo v3 > /opt/ml/processing/o/sdk.txt; echo from-sdk-v3"},
    )
    output = ProcessingS3Output(
        s3_uri=destination, local_path="/opt/ml/processing/o", s3_upload_mode="EndOfJob"
    )
    processor.run(outputs=[ProcessingOutput(output_name="o", s3_output=output)], wait=True, logs=True)
    print(processor.latest_job.processing_job_name)
""")


def test_sdk_v3_processor_runs_and_waits_with_logs(
    stack, sagemaker, s3, bucket, shell_algo_image, sdk_v3_python, tmp_path
):
    """SDK v3's `sagemaker.core.processing.Processor`, configured by the stack's env file alone."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sdk_v3_python, "-c", SDK_V3_SCRIPT, shell_algo_image, ROLE, f"s3://{bucket}/v3"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    assert "from-sdk-v3" in result.stdout  # the job's log, printed by logs=True
    name = result.stdout.split()[-1]
    assert sagemaker.describe_processing_job(ProcessingJobName=name)["ProcessingJobStatus"] == "Completed"
    assert s3.get_object(Bucket=bucket, Key="v3/sdk.txt")["Body"].read() == b"v3\n"
