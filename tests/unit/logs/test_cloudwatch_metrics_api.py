"""CloudWatch metrics (GetMetricStatistics, GetMetricData, ListMetrics) through a stock boto3
"cloudwatch" client (AWS JSON 1.0, as botocore sends it) over the series Sageport stores."""

from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from logs import histograms, metric_operations
from logs.metrics import MinuteKey, SeriesKey, StatisticSet, add_statistic_sets, put
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)

TRAINING = "/aws/sagemaker/TrainingJobs"
ENDPOINTS = "AWS/SageMaker"
T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
T0_MS = int(T0.timestamp() * 1000)
VARIANT = (("EndpointName", "ep"), ("VariantName", "AllTraffic"))


@pytest.fixture
def cloudwatch(make_client):  # noqa: F811
    client, _ = make_client("cloudwatch")
    return client


@pytest.fixture
def training_points(access_key):  # noqa: F811
    """loss of job `job`: algo-1 at +0 s (1.0), +10 s (3.0), +70 s (7.0); algo-2 at +20 s (5.0)."""
    key = SeriesKey(access_key.account_id, REGION, TRAINING, "job")
    put(key, "algo-1", [("loss", T0_MS, 1.0), ("loss", T0_MS + 10_000, 3.0), ("loss", T0_MS + 70_000, 7.0)])
    put(key, "algo-2", [("loss", T0_MS + 20_000, 5.0)])


def endpoint_minute(account_id, metric, statistic_set, *, minute=0, unit="None", account=None):
    key = MinuteKey(account or account_id, REGION, ENDPOINTS, metric, VARIANT, unit, T0_MS + minute * 60_000)
    add_statistic_sets({key: statistic_set})


def dimensions(**pairs):
    return [{"Name": name, "Value": value} for name, value in pairs.items()]


def statistics(cloudwatch, namespace=TRAINING, metric="loss", dims=None, **options):
    request = {
        "Namespace": namespace,
        "MetricName": metric,
        "Dimensions": dims if dims is not None else dimensions(TrainingJobName="job"),
        "StartTime": T0,
        "EndTime": T0 + timedelta(minutes=10),
        "Period": 60,
        **options,
    }
    if "ExtendedStatistics" not in options:
        request.setdefault("Statistics", ["SampleCount", "Average", "Sum", "Minimum", "Maximum"])
    return cloudwatch.get_metric_statistics(
        **{name: value for name, value in request.items() if value is not None}
    )


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


# --- GetMetricStatistics ---------------------------------------------------------------------


def test_the_jobs_metric_adds_up_every_host_per_period(cloudwatch, training_points):
    response = statistics(cloudwatch)

    assert response["Label"] == "loss"
    first, second = sorted(response["Datapoints"], key=lambda point: point["Timestamp"])
    assert first["Timestamp"] == T0 and second["Timestamp"] == T0 + timedelta(minutes=1)
    assert (first["SampleCount"], first["Sum"], first["Average"]) == (3, 9.0, 3.0)
    assert (first["Minimum"], first["Maximum"], first["Unit"]) == (1.0, 5.0, "None")
    assert (second["SampleCount"], second["Average"]) == (1, 7.0)


def test_the_host_dimension_selects_one_instance(cloudwatch, training_points):
    response = statistics(cloudwatch, dims=dimensions(Host="job/algo-2"), Statistics=["Average"])

    assert [point["Average"] for point in response["Datapoints"]] == [5.0]


def test_a_dimension_set_that_was_not_published_has_no_data(cloudwatch, training_points):
    both = dimensions(TrainingJobName="job", Host="job/algo-1")
    for dims in ([], dimensions(TrainingJobName="other"), both, dimensions(Host="job")):
        assert statistics(cloudwatch, dims=dims)["Datapoints"] == []


def test_percentiles_of_training_points(cloudwatch, training_points):
    response = statistics(cloudwatch, ExtendedStatistics=["p50", "p99.9"], EndTime=T0 + timedelta(minutes=1))

    (point,) = response["Datapoints"]
    assert point["ExtendedStatistics"] == {"p50": 3.0, "p99.9": 5.0}
    assert "Average" not in point


def test_endpoint_statistic_sets_add_up_across_minutes(cloudwatch, access_key):  # noqa: F811
    endpoint_minute(access_key.account_id, "Invocations", StatisticSet(3, 3, 1, 1), minute=0)
    endpoint_minute(access_key.account_id, "Invocations", StatisticSet(2, 2, 1, 1), minute=1)
    # The same minute written twice (two API processes) adds up.
    endpoint_minute(access_key.account_id, "Invocations", StatisticSet(1, 1, 1, 1), minute=1)

    response = statistics(
        cloudwatch,
        ENDPOINTS,
        "Invocations",
        dimensions(EndpointName="ep", VariantName="AllTraffic"),
        Period=300,
        Statistics=["Sum", "SampleCount"],
    )

    (point,) = response["Datapoints"]
    assert (point["Sum"], point["SampleCount"], point["Timestamp"]) == (6.0, 6.0, T0)


def test_latency_keeps_its_unit_and_a_request_for_another_unit_gets_nothing(cloudwatch, access_key):  # noqa: F811
    endpoint_minute(
        access_key.account_id, "ModelLatency", StatisticSet(2, 3000, 1000, 2000), unit="Microseconds"
    )
    dims = dimensions(VariantName="AllTraffic", EndpointName="ep")  # any order names the same metric

    (point,) = statistics(cloudwatch, ENDPOINTS, "ModelLatency", dims)["Datapoints"]
    assert (point["Average"], point["Minimum"], point["Maximum"], point["Unit"]) == (
        1500,
        1000,
        2000,
        "Microseconds",
    )
    assert statistics(cloudwatch, ENDPOINTS, "ModelLatency", dims, Unit="Seconds")["Datapoints"] == []
    # Percentiles need the values' spread; a statistic set without a histogram has none.
    percentile = statistics(cloudwatch, ENDPOINTS, "ModelLatency", dims, ExtendedStatistics=["p99"])
    assert "ExtendedStatistics" not in percentile["Datapoints"][0]


def latency_set(values: list[float]) -> StatisticSet:
    return StatisticSet(len(values), sum(values), min(values), max(values), histograms.of(values))


def test_latency_percentiles_merge_the_histograms_of_every_writer(cloudwatch, access_key):  # noqa: F811
    first, second = [1000.0] * 90 + [5000.0] * 9, [2000.0] * 100 + [80_000.0]
    for values in (first, second):  # two API processes writing the same minute
        endpoint_minute(access_key.account_id, "ModelLatency", latency_set(values), unit="Microseconds")
    dims = dimensions(EndpointName="ep", VariantName="AllTraffic")

    (point,) = statistics(cloudwatch, ENDPOINTS, "ModelLatency", dims, ExtendedStatistics=["p50", "p99"])[
        "Datapoints"
    ]
    data = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "p99",
                "MetricStat": {
                    "Metric": {"Namespace": ENDPOINTS, "MetricName": "ModelLatency", "Dimensions": dims},
                    "Period": 60,
                    "Stat": "p99",
                },
            }
        ],
        StartTime=T0,
        EndTime=T0 + timedelta(minutes=10),
    )

    # 200 values: the 100th is a 2000, the 198th a 5000 (nearest rank), each within 1%.
    assert point["ExtendedStatistics"] == {
        "p50": pytest.approx(2000.0, rel=0.01),
        "p99": pytest.approx(5000.0, rel=0.01),
    }
    assert data["MetricDataResults"][0]["Values"] == [point["ExtendedStatistics"]["p99"]]


def test_another_accounts_metrics_are_invisible(cloudwatch, access_key):  # noqa: F811
    put(SeriesKey("999999999999", REGION, TRAINING, "job"), "algo-1", [("loss", T0_MS, 1.0)])

    assert statistics(cloudwatch)["Datapoints"] == []
    assert cloudwatch.list_metrics()["Metrics"] == []


@pytest.mark.parametrize(
    ("options", "code", "words"),
    [
        ({"Period": 45}, "InvalidParameterValue", "multiple of 60"),
        ({"Statistics": None}, "InvalidParameterCombination", "must be specified"),
        (
            {"Statistics": ["Sum"], "ExtendedStatistics": ["p90"]},
            "InvalidParameterCombination",
            "mutually exclusive",
        ),
        ({"ExtendedStatistics": ["tm99"]}, "InvalidParameterValue", "tm99"),
        ({"EndTime": T0}, "InvalidParameterValue", "StartTime must be less than"),
        ({"Period": 1, "EndTime": T0 + timedelta(days=1)}, "InvalidParameterCombination", "1440"),
        ({"Statistics": ["Median"]}, "ValidationError", "enum value set"),
        ({"Namespace": "x" * 256}, "ValidationError", "length less than or equal to 255"),
    ],
)
def test_bad_requests_get_cloudwatchs_error_codes(cloudwatch, training_points, options, code, words):
    with pytest.raises(ClientError) as excinfo:
        statistics(cloudwatch, **options)

    assert error_code(excinfo) == code
    assert words in excinfo.value.response["Error"]["Message"]
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_modeled_errors_raise_their_botocore_exception_class(cloudwatch, training_points):
    with pytest.raises(cloudwatch.exceptions.InvalidParameterValueException):
        statistics(cloudwatch, Period=45)


# --- ListMetrics -----------------------------------------------------------------------------


def listed(response):
    return sorted(
        (
            metric["Namespace"],
            metric["MetricName"],
            tuple((d["Name"], d["Value"]) for d in metric["Dimensions"]),
        )
        for metric in response["Metrics"]
    )


def test_list_metrics_names_each_series_under_every_dimension_set(cloudwatch, training_points, access_key):  # noqa: F811
    endpoint_minute(access_key.account_id, "Invocations", StatisticSet(1, 1, 1, 1))

    assert listed(cloudwatch.list_metrics()) == [
        (TRAINING, "loss", (("Host", "job/algo-1"),)),
        (TRAINING, "loss", (("Host", "job/algo-2"),)),
        (TRAINING, "loss", (("TrainingJobName", "job"),)),
        (ENDPOINTS, "Invocations", VARIANT),
    ]
    assert listed(cloudwatch.list_metrics(Namespace=ENDPOINTS)) == [(ENDPOINTS, "Invocations", VARIANT)]
    assert len(cloudwatch.list_metrics(MetricName="loss")["Metrics"]) == 3
    assert listed(cloudwatch.list_metrics(Dimensions=[{"Name": "TrainingJobName"}])) == [
        (TRAINING, "loss", (("TrainingJobName", "job"),))
    ]
    assert listed(cloudwatch.list_metrics(Dimensions=dimensions(Host="job/algo-2"))) == [
        (TRAINING, "loss", (("Host", "job/algo-2"),))
    ]


def test_recently_active_leaves_out_metrics_silent_for_three_hours(cloudwatch, training_points):
    assert cloudwatch.list_metrics(RecentlyActive="PT3H")["Metrics"] == []


def test_list_metrics_pages_with_next_token(cloudwatch, training_points, monkeypatch):
    monkeypatch.setattr(metric_operations, "LIST_METRICS_PAGE", 2)

    first = cloudwatch.list_metrics()
    second = cloudwatch.list_metrics(NextToken=first["NextToken"])

    assert len(first["Metrics"]) == 2 and len(second["Metrics"]) == 1
    assert "NextToken" not in second
    with pytest.raises(ClientError) as excinfo:
        cloudwatch.list_metrics(NextToken="garbage")
    assert error_code(excinfo) == "InvalidParameterValue"


# --- GetMetricData ---------------------------------------------------------------------------


def query(query_id, stat="Average", dims=None, **extra):
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": TRAINING,
                "MetricName": "loss",
                "Dimensions": dims or dimensions(TrainingJobName="job"),
            },
            "Period": 60,
            "Stat": stat,
        },
        **extra,
    }


def metric_data(cloudwatch, queries, **options):
    return cloudwatch.get_metric_data(
        MetricDataQueries=queries, StartTime=T0, EndTime=T0 + timedelta(minutes=10), **options
    )


def test_get_metric_data_answers_each_query_newest_first(cloudwatch, training_points):
    response = metric_data(
        cloudwatch, [query("avg"), query("top", "Maximum", Label="highest"), query("p", "p50")]
    )

    average, maximum, median = response["MetricDataResults"]
    assert (average["Id"], average["Label"], average["StatusCode"]) == ("avg", "loss", "Complete")
    assert average["Timestamps"] == [T0 + timedelta(minutes=1), T0]
    assert average["Values"] == [7.0, 3.0]
    assert (maximum["Label"], maximum["Values"]) == ("highest", [7.0, 5.0])
    assert median["Values"] == [7.0, 3.0]
    assert "NextToken" not in response


def test_get_metric_data_oldest_first_and_hidden_queries(cloudwatch, training_points):
    response = metric_data(
        cloudwatch, [query("a", "Sum"), query("hidden", ReturnData=False)], ScanBy="TimestampAscending"
    )

    (result,) = response["MetricDataResults"]
    assert (result["Id"], result["Values"]) == ("a", [9.0, 7.0])


def test_get_metric_data_pages_by_max_datapoints(cloudwatch, training_points):
    queries = [query("a"), query("b", dims=dimensions(Host="job/algo-1"))]

    first = metric_data(cloudwatch, queries, MaxDatapoints=3)
    second = metric_data(cloudwatch, queries, MaxDatapoints=3, NextToken=first["NextToken"])

    a, b = first["MetricDataResults"]
    assert (len(a["Values"]), a["StatusCode"]) == (2, "Complete")
    assert (len(b["Values"]), b["StatusCode"]) == (1, "PartialData")
    assert [result["Values"] for result in second["MetricDataResults"]] == [[], [2.0]]
    assert [result["StatusCode"] for result in second["MetricDataResults"]] == ["Complete", "Complete"]
    assert "NextToken" not in second


@pytest.mark.parametrize(
    ("queries", "options", "code", "words"),
    [
        ([{"Id": "e1", "Expression": "SUM(METRICS())"}], {}, "InvalidParameterValue", "metric math"),
        ([query("a", "tm99")], {}, "InvalidParameterValue", "tm99"),
        ([query("a"), query("a")], {}, "InvalidParameterValue", "more than one query"),
        ([query("a", ReturnData=False)], {}, "InvalidParameterValue", "ReturnData"),
        ([query("a")], {"NextToken": "garbage"}, "InvalidNextToken", "NextToken"),
        ([query("a")], {"MaxDatapoints": 0}, "InvalidParameterValue", "MaxDatapoints"),
    ],
)
def test_get_metric_data_refuses_what_it_cannot_answer(
    cloudwatch, training_points, queries, options, code, words
):
    with pytest.raises(ClientError) as excinfo:
        metric_data(cloudwatch, queries, **options)

    assert error_code(excinfo) == code
    assert words in excinfo.value.response["Error"]["Message"]
