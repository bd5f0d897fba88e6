"""Training containers' output read back through a stock boto3 "logs" client on the live stack."""
import json
import time

import pytest

from tests.e2e.conftest import shell_job, unique_name, wait_for_status

GROUP = "/aws/sagemaker/TrainingJobs"


@pytest.fixture(scope="module")
def logs(stack):
    return stack.client("logs")


def job_streams(logs, name: str, count: int, timeout: float = 60.0) -> list[str]:
    """The job's stream names once `count` exist (bounded wait): streams appear as containers start."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")
            names = [stream["logStreamName"] for stream in response["logStreams"]]
        except logs.exceptions.ResourceNotFoundException:
            names = []  # the account's first job: no stream in the group yet
        if len(names) >= count:
            return names
        assert time.monotonic() < deadline, f"{name} has streams {names} after {timeout}s"
        time.sleep(0.3)


def read(logs, stream: str, **params) -> dict:
    return logs.get_log_events(logGroupName=GROUP, logStreamName=stream, **params)


def wait_for_line(logs, stream: str, line: str, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        events = read(logs, stream, startFromHead=True)["events"]
        if any(event["message"] == line for event in events):
            return events
        assert time.monotonic() < deadline, f"{line!r} not in {stream} after {timeout}s"
        time.sleep(0.3)


def test_a_running_jobs_output_can_be_followed_with_get_log_events_until_it_ends(
    stack, sagemaker, logs, bucket, shell_algo_image
):
    name = unique_name("follow")
    # Runs until StopTrainingJob, so the test decides when the job ends: no race with the clock.
    script = (
        "echo first line; sleep 0.1; echo second line >&2; "
        "trap 'echo stopping; exit 0' TERM; while :; do sleep 0.2; done"
    )
    created = time.time() * 1000
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    (stream,) = job_streams(logs, name, count=1)
    running = wait_for_line(logs, stream, "second line")
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress"
    assert [event["message"] for event in running] == ["first line", "second line"]
    assert created - 5000 < running[0]["timestamp"] <= running[1]["timestamp"] < time.time() * 1000

    first_page = read(logs, stream, startFromHead=True)
    sagemaker.stop_training_job(TrainingJobName=name)
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Stopped"

    rest = read(logs, stream, nextToken=first_page["nextForwardToken"])
    caught_up = read(logs, stream, nextToken=rest["nextForwardToken"])
    assert [event["message"] for event in rest["events"]] == ["stopping"]
    assert caught_up["events"] == [] and caught_up["nextForwardToken"] == rest["nextForwardToken"]
    assert stream.startswith(f"{name}/algo-1-")


def test_each_host_has_its_stream_and_filter_log_events_searches_them_together(
    sagemaker, logs, bucket, shell_algo_image
):
    name = unique_name("hosts")
    script = 'h=$(hostname); echo "INFO starting on $h"; echo "ERROR disk full on $h"; echo "INFO done on $h"'
    request = shell_job(name, shell_algo_image, bucket, script)
    request["ResourceConfig"]["InstanceCount"] = 2
    sagemaker.create_training_job(**request)
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"

    streams = job_streams(logs, name, count=2)
    errors = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=f"{name}/", filterPattern="ERROR")
    done = logs.filter_log_events(logGroupName=GROUP, logStreamNames=streams, filterPattern='"INFO done"')

    assert [stream.split("/")[1].rsplit("-", 1)[0] for stream in streams] == ["algo-1", "algo-2"]
    assert sorted((event["logStreamName"], event["message"]) for event in errors["events"]) == [
        (streams[0], "ERROR disk full on algo-1"),
        (streams[1], "ERROR disk full on algo-2"),
    ]
    assert sorted(event["message"] for event in done["events"]) == [f"INFO done on algo-{n}" for n in (1, 2)]
    assert "nextToken" not in errors and "nextToken" not in done


def test_logs_are_scoped_to_the_account_that_ran_the_job(stack, sagemaker, logs, bucket, shell_algo_image):
    name = unique_name("scoped")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo private"))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"
    (stream,) = job_streams(logs, name, count=1)
    key_id, secret = stack.create_access_key("444455556666")
    stranger = stack.client("logs", aws_access_key_id=key_id, aws_secret_access_key=secret)

    with pytest.raises(stranger.exceptions.ResourceNotFoundException) as raised:
        stranger.get_log_events(logGroupName=GROUP, logStreamName=stream)
    assert raised.value.response["Error"]["Message"] == "The specified log group does not exist."
    with pytest.raises(logs.exceptions.ResourceNotFoundException) as missing:
        logs.get_log_events(logGroupName=GROUP, logStreamName=f"{name}/algo-7-1")
    assert missing.value.response["Error"]["Message"] == "The specified log stream does not exist."


def test_log_streams_describe_their_events_and_sort_by_last_event_time(
    sagemaker, logs, bucket, shell_algo_image
):
    name = unique_name("described")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo one; sleep 1; echo two"))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"

    (stream,) = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    events = read(logs, stream["logStreamName"], startFromHead=True)
    newest = logs.describe_log_streams(logGroupName=GROUP, orderBy="LastEventTime", descending=True, limit=1)

    timestamps = [event["timestamp"] for event in events["events"]]
    assert (stream["firstEventTimestamp"], stream["lastEventTimestamp"]) == (timestamps[0], timestamps[-1])
    assert stream["lastIngestionTime"] >= stream["creationTime"]
    assert stream["arn"].endswith(f":log-group:{GROUP}:log-stream:{stream['logStreamName']}")
    assert newest["logStreams"][0]["lastEventTimestamp"] >= stream["lastEventTimestamp"]
    assert json.dumps(newest["logStreams"])  # every member is plain JSON (no datetimes): times are ms
