"""The SageMaker Python SDK (v2)'s processors run unchanged against Sageport, pointed at it by the
stack's environment file alone: `Processor` (an image and its entrypoint) and `ScriptProcessor`
(the SDK uploads the script to S3 as a `code` input under /opt/ml/processing/input/code and runs
it with `command`), both with `wait=True, logs=True`, which polls DescribeProcessingJob and
prints the job's CloudWatch stream (/aws/sagemaker/ProcessingJobs) as it goes."""
import sys

from sagemaker.processing import ProcessingInput, ProcessingOutput, Processor, ScriptProcessor

from tests.e2e.sdk import ROLE, WatchedOutput


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
