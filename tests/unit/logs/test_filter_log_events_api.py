"""FilterLogEvents through a stock boto3 "logs" client: streams, patterns, time range, pages."""
import pytest

from logs import queries
from tests.unit.logs.conftest import GROUP


def messages(response):
    return [event["message"] for event in response["events"]]


@pytest.fixture
def two_hosts(write):
    write("job/algo-1-1", [(1000, "epoch 1 loss=0.9"), (3000, "ERROR disk full"), (5000, "done")])
    write("job/algo-2-1", [(2000, "epoch 1 loss=0.8"), (4000, "WARN slow Exception in thread main")])
    write("other/algo-1-1", [(1500, "ERROR elsewhere")])


def test_events_of_all_streams_interleave_in_time_order_with_stream_names_and_ids(logs, two_hosts):
    response = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix="job/")

    assert [(e["timestamp"], e["logStreamName"]) for e in response["events"]] == [
        (1000, "job/algo-1-1"),
        (2000, "job/algo-2-1"),
        (3000, "job/algo-1-1"),
        (4000, "job/algo-2-1"),
        (5000, "job/algo-1-1"),
    ]
    assert len({event["eventId"] for event in response["events"]}) == 5
    assert "nextToken" not in response


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("ERROR", ["ERROR elsewhere", "ERROR disk full"]),
        ("ERROR disk", ["ERROR disk full"]),
        ('"Exception in thread"', ["WARN slow Exception in thread main"]),
        ("?ERROR ?WARN -elsewhere", ["ERROR disk full", "WARN slow Exception in thread main"]),
        ("error", []),
        ("", None),
    ],
)
def test_filter_pattern_terms_and_phrases(logs, two_hosts, pattern, expected):
    everything = messages(logs.filter_log_events(logGroupName=GROUP))
    response = logs.filter_log_events(logGroupName=GROUP, filterPattern=pattern)
    assert messages(response) == (everything if expected is None else expected)


def test_named_streams_and_an_inclusive_time_range(logs, two_hosts):
    response = logs.filter_log_events(
        logGroupName=GROUP, logStreamNames=["job/algo-1-1", "other/algo-1-1"], startTime=1500, endTime=3000
    )
    assert messages(response) == ["ERROR elsewhere", "ERROR disk full"]


def test_paginator_walks_every_match_once(logs, two_hosts):
    paginator = logs.get_paginator("filter_log_events")
    pages = paginator.paginate(logGroupName=GROUP, PaginationConfig={"PageSize": 2})
    seen = [event["timestamp"] for page in pages for event in page["events"]]
    assert seen == [1000, 1500, 2000, 3000, 4000, 5000]


def test_a_search_cut_short_by_the_scan_limit_resumes_where_it_stopped(logs, two_hosts, monkeypatch):
    monkeypatch.setattr(queries, "FILTER_SCAN_LIMIT", 2)

    first = logs.filter_log_events(logGroupName=GROUP, filterPattern="ERROR")
    rest = logs.filter_log_events(logGroupName=GROUP, filterPattern="ERROR", nextToken=first["nextToken"])
    assert (messages(first), messages(rest)) == (["ERROR elsewhere"], ["ERROR disk full"])


def test_json_and_unbalanced_patterns_are_invalid_parameters(logs, two_hosts):
    for pattern in ('{ $.level = "ERROR" }', '"unterminated'):
        with pytest.raises(logs.exceptions.InvalidParameterException):
            logs.filter_log_events(logGroupName=GROUP, filterPattern=pattern)


def test_stream_names_and_prefix_together_are_refused(logs, two_hosts):
    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        logs.filter_log_events(logGroupName=GROUP, logStreamNames=["job/algo-1-1"], logStreamNamePrefix="job")
    message = raised.value.response["Error"]["Message"]
    assert message == "Cannot specify both logStreamNames and logStreamNamePrefix."
