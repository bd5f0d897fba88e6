"""A hostile serve container in a transform job, treated as training treats hostile containers:
it may hang, flood its answer or flood its stdout, and the job still ends, bounded, with
SageMaker's reason.

What SageMaker does: ModelClientConfig (API reference) bounds each request,
InvocationsTimeoutInSeconds ("The timeout value in seconds for an invocation request. The default
value is 600"), and sends it again InvocationsMaxRetries times ("The maximum number of retries when
invocation requests are failing. The default value is 3"); the job then fails, and its data log
says `<bucket>/<key>: Model server did not respond to /invocations request within <n> seconds`
(the words grand-challenge.org's SageMaker batch backend looks for in the data log to tell a time
limit). SageMaker documents no bound on one answer's size nor on a container's output; Sageport
refuses an answer past 256 MiB (held on disk past a payload's size, never whole in memory) and
copies a container's output into CloudWatch in bounded slices."""

import time

import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import unique_name
from tests.e2e.transform_requests import transform_request, wait_for_transform

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image

GROUP = "/aws/sagemaker/TransformJobs"
# The chatty model's stdout: 1.5 times what one look copies into CloudWatch (LOG_BYTES_PER_LOOK,
# 4 MiB, in lines of 97 bytes), so that its copy takes several bounded looks. A larger flood
# checks nothing more and costs its storing and reading back (27 MB took a minute).
SHOUT_LINES = 3 * (4 << 20) // (2 * 97)


def _messages(logs, name: str, data_log: bool) -> list[str]:
    """The job's messages in CloudWatch; none before the session's first transform output creates
    the log group."""
    try:
        streams = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    except logs.exceptions.ResourceNotFoundException:
        return []
    chosen = [s["logStreamName"] for s in streams if s["logStreamName"].endswith("/data-log") == data_log]
    messages = []
    for stream in chosen:
        for page in logs.get_paginator("filter_log_events").paginate(
            logGroupName=GROUP, logStreamNames=[stream]
        ):
            messages += [event["message"] for event in page["events"]]
    return messages


def test_a_hanging_model_times_out_after_its_retries_in_sagemakers_words(sagemaker, s3, bucket, model, stack):
    s3.put_object(Bucket=bucket, Key="in/hangs.csv", Body=b"sleep\n")
    name = unique_name("transform")
    client_config = {"InvocationsTimeoutInSeconds": 1, "InvocationsMaxRetries": 1}
    sagemaker.create_transform_job(
        **transform_request(name, model(), bucket, ModelClientConfig=client_config)
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Failed"
    assert job["ModelClientConfig"] == client_config
    expected = f"{bucket}/in/hangs.csv: Model server did not respond to /invocations request within 1 seconds"
    assert expected in job["FailureReason"]
    logs = stack.client("logs")
    assert any(message.endswith(expected) for message in _messages(logs, name, data_log=True))
    # Sent once, then once again (InvocationsMaxRetries 1): the model saw two requests.
    said = _messages(logs, name, data_log=False)
    assert sum("invocation content-type" in message for message in said) == 2, said[-20:]
    with pytest.raises(ClientError):  # no .out for the object that failed
        s3.head_object(Bucket=bucket, Key="out/hangs.csv.out")


def test_stop_while_the_model_hangs_ends_the_job_promptly(sagemaker, s3, bucket, model, stack):
    """StopTransformJob while a request hangs in the model (under the default 600 s timeout): the
    job does not wait for its answer."""
    s3.put_object(Bucket=bucket, Key="in/slow.csv", Body=b"sleep\n")
    name = unique_name("transform")
    sagemaker.create_transform_job(**transform_request(name, model(), bucket))
    logs = stack.client("logs")
    deadline = time.monotonic() + 90
    while not any("invocation content-type" in m for m in _messages(logs, name, data_log=False)):
        assert time.monotonic() < deadline, "the request never reached the model"
        time.sleep(0.2)
    stopped_at = time.monotonic()
    sagemaker.stop_transform_job(TransformJobName=name)
    assert sagemaker.describe_transform_job(TransformJobName=name)["TransformJobStatus"] in (
        "Stopping",
        "Stopped",
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Stopped"
    assert time.monotonic() - stopped_at < 20
    with pytest.raises(ClientError):  # nothing written for the object that was not transformed
        s3.head_object(Bucket=bucket, Key="out/slow.csv.out")


def test_a_flooding_model_fails_its_object_and_a_chatty_one_completes(sagemaker, s3, bucket, model, stack):
    """Two jobs at once: one whose model answers without end (the answer is refused at 256 MiB,
    the job fails naming the object), one whose model prints more to stdout before answering than
    one look copies into CloudWatch: the job completes; its log stream holds a share of the
    lines, none of them twice."""
    s3.put_object(Bucket=bucket, Key="flood/a.csv", Body=b"flood\n")
    s3.put_object(Bucket=bucket, Key="shout/b.csv", Body=b"shout\n")
    flooded, chatty = unique_name("transform"), unique_name("transform")
    sagemaker.create_transform_job(**transform_request(flooded, model(), bucket, prefix="flood/"))
    chatty_model = model(SHOUT_LINES=str(SHOUT_LINES))
    sagemaker.create_transform_job(**transform_request(chatty, chatty_model, bucket, prefix="shout/"))

    job = wait_for_transform(sagemaker, flooded)
    assert job["TransformJobStatus"] == "Failed"
    assert f"{bucket}/flood/a.csv" in job["FailureReason"]
    assert "answer to one request is over 268435456 bytes" in job["FailureReason"]
    job = wait_for_transform(sagemaker, chatty)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert s3.get_object(Bucket=bucket, Key="out/b.csv.out")["Body"].read() == b"SHOUT\n"
    logs = stack.client("logs")
    shouted = [m for m in _messages(logs, chatty, data_log=False) if m.startswith("shouting line")]
    assert 0 < len(shouted) <= SHOUT_LINES
    assert len(set(shouted)) == len(shouted)  # each line copied once (logs/container_logs.py)
