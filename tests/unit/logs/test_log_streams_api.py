"""DescribeLogStreams through a stock boto3 "logs" client: order, prefix, pages, members."""
import pytest

from tests.unit.logs.conftest import GROUP


def names(response):
    return [stream["logStreamName"] for stream in response["logStreams"]]


def test_streams_report_event_times_arn_and_creation_time(logs, write, access_key):
    write("job/algo-1-1", [(1000, "a"), (3000, "b")])

    (stream,) = logs.describe_log_streams(logGroupName=GROUP)["logStreams"]

    assert stream["logStreamName"] == "job/algo-1-1"
    assert (stream["firstEventTimestamp"], stream["lastEventTimestamp"]) == (1000, 3000)
    assert stream["lastIngestionTime"] >= stream["creationTime"] > 1_600_000_000_000
    # CloudWatch Logs' stream ARN: `arn:aws:logs:<region>:<account>:log-group:<group>:log-stream:<stream>`
    # (botocore's LogStream.arn; the form AWS answers, e.g. ParallelCluster's documented
    # `list-cluster-log-streams` output `…:log-group:/aws/parallelcluster/…:log-stream:ip-10-0-0-13…`).
    group_arn = f"arn:aws:logs:eu-west-1:{access_key.account_id}:log-group:{GROUP}"
    assert stream["arn"] == f"{group_arn}:log-stream:job/algo-1-1"
    assert stream["storedBytes"] == 0


def test_a_stream_without_events_has_no_event_times(logs, write):
    write("job/algo-1-1", [])

    (stream,) = logs.describe_log_streams(logGroupName=GROUP)["logStreams"]
    assert "firstEventTimestamp" not in stream and "lastEventTimestamp" not in stream


def test_prefix_selects_one_jobs_streams_in_name_order(logs, write):
    for name in ("job-b/algo-1-1", "job/algo-2-1", "job/algo-1-1", "jobx/algo-1-1"):
        write(name, [(1, "x")])

    response = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix="job/")
    assert names(response) == ["job/algo-1-1", "job/algo-2-1"]
    assert "nextToken" not in response


def test_order_by_last_event_time_descending(logs, write):
    write("old", [(1000, "x")])
    write("new", [(3000, "x")])
    write("middle", [(2000, "x")])

    response = logs.describe_log_streams(logGroupName=GROUP, orderBy="LastEventTime", descending=True)
    assert names(response) == ["new", "middle", "old"]


def test_next_token_only_while_more_streams_exist(logs, write):
    for index in range(4):
        write(f"job/algo-{index + 1}-1", [(1, "x")])

    first = logs.describe_log_streams(logGroupName=GROUP, limit=2)
    second = logs.describe_log_streams(logGroupName=GROUP, limit=2, nextToken=first["nextToken"])
    assert names(first) + names(second) == [f"job/algo-{n}-1" for n in range(1, 5)]
    assert "nextToken" not in second
    assert "nextToken" not in logs.describe_log_streams(logGroupName=GROUP, limit=4)


def test_paginator_walks_every_stream_once(logs, write):
    for index in range(5):
        write(f"s{index}", [(1, "x")])

    paginator = logs.get_paginator("describe_log_streams")
    pages = paginator.paginate(logGroupName=GROUP, PaginationConfig={"PageSize": 2})
    assert [name for page in pages for name in names(page)] == [f"s{n}" for n in range(5)]


def test_last_event_time_order_with_a_prefix_is_refused(logs, write):
    write("job/algo-1-1", [(1, "x")])

    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        logs.describe_log_streams(logGroupName=GROUP, orderBy="LastEventTime", logStreamNamePrefix="job/")
    message = raised.value.response["Error"]["Message"]
    assert message == "Cannot order by LastEventTime with a logStreamNamePrefix."


def test_limit_above_fifty_is_an_invalid_parameter(logs, write):
    write("job/algo-1-1", [(1, "x")])

    with pytest.raises(logs.exceptions.InvalidParameterException):
        logs.describe_log_streams(logGroupName=GROUP, limit=51)


def test_a_group_without_streams_does_not_exist(logs):
    with pytest.raises(logs.exceptions.ResourceNotFoundException) as raised:
        logs.describe_log_streams(logGroupName="/aws/sagemaker/Endpoints/none")
    assert raised.value.response["Error"]["Message"] == "The specified log group does not exist."


def test_a_forged_next_token_is_an_invalid_parameter(logs, write):
    write("job/algo-1-1", [(1, "x")])

    with pytest.raises(logs.exceptions.InvalidParameterException):
        logs.describe_log_streams(logGroupName=GROUP, nextToken="forged")
