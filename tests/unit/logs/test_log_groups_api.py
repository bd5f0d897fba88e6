"""DescribeLogGroups through a stock boto3 "logs" client: the groups an account's streams make."""

import pytest
from botocore.exceptions import ClientError

from tests.unit.logs.conftest import GROUP

ENDPOINT_GROUP = "/aws/sagemaker/Endpoints/ep"


def names(response):
    return [group["logGroupName"] for group in response["logGroups"]]


def test_each_group_is_listed_once_with_its_arn_size_and_creation_time(logs, write, access_key):
    write("job/algo-1-1", [(1000, "abc"), (2000, "de")])
    write("job/algo-2-1", [(1000, "f")])

    (group,) = logs.describe_log_groups()["logGroups"]

    arn = f"arn:aws:logs:eu-west-1:{access_key.account_id}:log-group:{GROUP}"
    assert (group["logGroupName"], group["arn"], group["logGroupArn"]) == (GROUP, f"{arn}:*", arn)
    assert group["storedBytes"] == 6
    assert group["creationTime"] > 1_600_000_000_000
    assert group["metricFilterCount"] == 0 and "retentionInDays" not in group


def test_retention_days_are_reported_when_set(logs, write, settings):
    settings.SAGEPORT_LOG_RETENTION_DAYS = 7
    write("job/algo-1-1", [(1, "x")])

    assert logs.describe_log_groups()["logGroups"][0]["retentionInDays"] == 7


def test_prefix_and_pattern_narrow_the_groups(logs, write):
    write("job/algo-1-1", [(1, "x")])
    write("AllTraffic/c-1", [(1, "x")], group=ENDPOINT_GROUP)

    assert names(logs.describe_log_groups(logGroupNamePrefix="/aws/sagemaker/Endpoints")) == [ENDPOINT_GROUP]
    assert names(logs.describe_log_groups(logGroupNamePattern="trainingjobs")) == [GROUP]
    assert names(logs.describe_log_groups(logGroupNamePrefix="/nothing")) == []
    with pytest.raises(logs.exceptions.InvalidParameterException):
        logs.describe_log_groups(logGroupNamePrefix="/aws", logGroupNamePattern="x")


def test_groups_page_in_name_order(logs, write):
    for name in ("/c", "/a", "/b"):
        write("s", [(1, "x")], group=name)

    first = logs.describe_log_groups(limit=2)
    second = logs.describe_log_groups(limit=2, nextToken=first["nextToken"])

    assert names(first) + names(second) == ["/a", "/b", "/c"]
    assert "nextToken" not in second
    with pytest.raises(ClientError) as excinfo:
        logs.describe_log_groups(nextToken="garbage")
    assert excinfo.value.response["Error"]["Code"] == "InvalidParameterException"


def test_another_accounts_groups_are_invisible(logs, write):
    write("s", [(1, "x")], group="/theirs", account="999999999999")

    assert logs.describe_log_groups()["logGroups"] == []
