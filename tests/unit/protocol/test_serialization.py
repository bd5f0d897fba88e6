"""JSON answers: the wire values botocore reads, and the Date header."""
import json
from datetime import UTC, datetime

from django.utils.http import http_date

from protocol import serialization


def test_an_answer_carries_epoch_seconds_drops_absent_members_and_counts_utf8_bytes():
    body = {
        "CreationTime": datetime(2026, 11, 29, 23, 0, 1, 234567, tzinfo=UTC),
        "Naive": datetime(2026, 11, 29, 23, 0, 1),
        "FailureReason": None,
        "Tags": [{"Key": "équipe", "Value": "模型"}, None],
        "Nested": {"Count": 3, "Ratio": 0.5, "On": True, "Gone": None},
        "Weights": [float("nan"), float("inf"), -float("inf")],
    }
    response = serialization.json_response(body, "request-1")

    assert json.loads(response.content) == {
        "CreationTime": 1795993201.235,
        "Naive": 1795993201.0,  # read as UTC
        "Tags": [{"Key": "équipe", "Value": "模型"}],
        "Nested": {"Count": 3, "Ratio": 0.5, "On": True},
        "Weights": ["NaN", "Infinity", "-Infinity"],  # as AWS's JSON protocols write them
    }
    assert response["Content-Length"] == str(len(response.content))
    assert response["Content-Type"] == serialization.AMZ_JSON_11
    assert response["x-amzn-RequestId"] == "request-1"


def test_the_date_header_follows_the_clock_to_the_second(monkeypatch):
    for now in (1796000401.2, 1796000401.9, 1796000402.0):
        monkeypatch.setattr(serialization.time, "time", lambda now=now: now)
        assert serialization.date_header() == http_date(int(now))


def test_what_the_fast_encoder_refuses_is_still_answered():
    # orjson refuses integers beyond 64 bits and keys that are not strings; no answer may fail on them.
    response = serialization.json_response({"Bytes": 2**70, "ByCode": {404: 1}}, "request-2")

    assert response.status_code == 200
    assert json.loads(response.content) == {"Bytes": 2**70, "ByCode": {"404": 1}}
    assert response["Content-Length"] == str(len(response.content))
