"""GetLogEvents through a stock boto3 "logs" client: time windows, both directions, stable tokens."""
import pytest

from logs import queries
from tests.unit.logs.conftest import GROUP

STREAM = "job/algo-1-1700000000"


def messages(response):
    return [event["message"] for event in response["events"]]


@pytest.fixture
def get(logs):
    """get(**params): GetLogEvents on STREAM of GROUP."""
    return lambda **params: logs.get_log_events(logGroupName=GROUP, logStreamName=STREAM, **params)


def test_events_from_head_carry_millisecond_timestamps_and_ingestion_times(get, write):
    write(STREAM, [(1_700_000_000_123, "one"), (1_700_000_000_456, "two")])

    response = get(startFromHead=True)

    assert [(e["timestamp"], e["message"]) for e in response["events"]] == [
        (1_700_000_000_123, "one"),
        (1_700_000_000_456, "two"),
    ]
    assert all(event["ingestionTime"] >= 1_700_000_000_000 for event in response["events"])
    assert response["nextForwardToken"] and response["nextBackwardToken"]


def test_forward_token_is_returned_unchanged_until_new_events_arrive(get, write):
    write(STREAM, [(1000, "one")])
    first = get(startFromHead=True)

    caught_up = get(nextToken=first["nextForwardToken"])
    again = get(nextToken=caught_up["nextForwardToken"])
    assert (messages(caught_up), messages(again)) == ([], [])
    assert first["nextForwardToken"] == caught_up["nextForwardToken"] == again["nextForwardToken"]

    write(STREAM, [(1000, "same millisecond"), (2000, "later")])
    more = get(nextToken=again["nextForwardToken"])
    assert messages(more) == ["same millisecond", "later"]
    assert more["nextForwardToken"] != again["nextForwardToken"]


def test_start_time_is_inclusive_and_end_time_exclusive(get, write):
    write(STREAM, [(1000, "a"), (2000, "b"), (3000, "c")])

    assert messages(get(startTime=2000, endTime=3000, startFromHead=True)) == ["b"]


def test_without_start_from_head_the_newest_events_come_first_and_backward_tokens_page_older(get, write):
    write(STREAM, [(t, f"line {t}") for t in range(1, 6)])

    newest = get(limit=2)
    older = get(limit=2, nextToken=newest["nextBackwardToken"])
    oldest = get(limit=2, nextToken=older["nextBackwardToken"])
    beyond = get(limit=2, nextToken=oldest["nextBackwardToken"])

    assert [messages(page) for page in (newest, older, oldest, beyond)] == [
        ["line 4", "line 5"],
        ["line 2", "line 3"],
        ["line 1"],
        [],
    ]
    assert beyond["nextBackwardToken"] == oldest["nextBackwardToken"]


def test_a_page_stops_at_one_mebibyte_of_events(get, write, monkeypatch):
    monkeypatch.setattr(queries, "MAX_RESPONSE_BYTES", 3 * (100 + queries.EVENT_OVERHEAD_BYTES))
    write(STREAM, [(t, "x" * 100) for t in range(1, 6)])

    first = get(startFromHead=True)
    rest = get(nextToken=first["nextForwardToken"])
    assert (len(first["events"]), len(rest["events"])) == (3, 2)


def test_an_empty_stream_gives_tokens_that_later_find_its_first_events(get, write):
    write(STREAM, [])

    empty = get()
    write(STREAM, [(5, "first")])
    followed = get(nextToken=empty["nextForwardToken"])
    assert (messages(empty), messages(followed)) == ([], ["first"])


def test_unknown_group_and_unknown_stream_are_resource_not_found(logs, write):
    write(STREAM, [(1, "x")])

    with pytest.raises(logs.exceptions.ResourceNotFoundException) as no_group:
        logs.get_log_events(logGroupName="/aws/sagemaker/Nothing", logStreamName=STREAM)
    with pytest.raises(logs.exceptions.ResourceNotFoundException) as no_stream:
        logs.get_log_events(logGroupName=GROUP, logStreamName="job/algo-9-1")
    assert no_group.value.response["Error"]["Message"] == "The specified log group does not exist."
    assert no_stream.value.response["Error"]["Message"] == "The specified log stream does not exist."
    assert no_stream.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_forged_token_is_an_invalid_parameter(logs, get, write):
    write(STREAM, [(1, "x")])

    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        get(nextToken="f/garbage")
    assert raised.value.response["Error"]["Message"] == "The specified nextToken is invalid."


def test_shape_violations_are_invalid_parameter_exceptions_in_aws_wording(logs, get, write):
    write(STREAM, [(1, "x")])

    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        get(limit=10_001)
    assert raised.value.response["Error"]["Message"] == (
        "1 validation error detected: Value '10001' at 'limit' failed to satisfy constraint: "
        "Member must have value less than or equal to 10000"
    )


def test_streams_belong_to_one_account(logs, get, write):
    write(STREAM, [(1, "someone else's")], account="999999999999")

    with pytest.raises(logs.exceptions.ResourceNotFoundException):
        get()


def test_group_by_arn_identifier_and_refusal_of_both_name_and_arn(logs, write, access_key):
    write(STREAM, [(1, "x")])
    arn = f"arn:aws:logs:eu-west-1:{access_key.account_id}:log-group:{GROUP}"

    response = logs.get_log_events(logGroupIdentifier=arn, logStreamName=STREAM, startFromHead=True)
    assert messages(response) == ["x"]
    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        logs.get_log_events(logGroupName=GROUP, logGroupIdentifier=arn, logStreamName=STREAM)
    assert raised.value.response["Error"]["Message"] == (
        "LogGroup name and LogGroup ARN are mutually exclusive parameters."
    )
