"""Endpoint invocation metrics: added up in memory per variant and minute, written as CloudWatch
statistic sets, and read back through GetMetricStatistics (boto3, in-process)."""

import multiprocessing
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import DatabaseError

from hosting.runtime_api import components, invocation_metrics
from hosting.runtime_api.invocation_metrics import Invocation, InvocationMetrics
from logs.models import MetricStatisticSet
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)

NOW = 1_795_000_000.0  # a fixed clock, in the middle of a minute
MINUTE_START = datetime.fromtimestamp(NOW - NOW % 60, UTC)


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr(invocation_metrics.time, "time", lambda: NOW)


@pytest.fixture
def cloudwatch(make_client):  # noqa: F811
    client, _ = make_client("cloudwatch")
    return client


def invocation(account, model_seconds=0.002, status=200, variant="AllTraffic"):
    return Invocation(account, REGION, "ep", variant, model_seconds, status)


def statistic(cloudwatch, metric, name, variant="AllTraffic"):
    response = cloudwatch.get_metric_statistics(
        Namespace="AWS/SageMaker",
        MetricName=metric,
        Dimensions=[{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": variant}],
        StartTime=MINUTE_START,
        EndTime=MINUTE_START + timedelta(minutes=1),
        Period=60,
        Statistics=[name],
    )
    (point,) = response["Datapoints"]
    return point[name], point["Unit"]


def test_invocations_errors_and_latencies_of_one_minute(cloudwatch, access_key, clock, db):  # noqa: F811
    metrics = InvocationMetrics(flush_seconds=3600, background=False)
    account = access_key.account_id
    metrics.record(invocation(account, 0.002, 200), total_seconds=0.003)
    metrics.record(invocation(account, 0.004, 404), total_seconds=0.0045)
    metrics.record(invocation(account, 0.006, 503), total_seconds=0.010)
    metrics.record(invocation(account, 0.001, 0), total_seconds=0.002)  # the container never answered

    metrics.flush()

    assert statistic(cloudwatch, "Invocations", "Sum") == (4, "None")
    assert statistic(cloudwatch, "Invocation4XXErrors", "Sum") == (1, "None")
    assert statistic(cloudwatch, "Invocation5XXErrors", "Sum") == (2, "None")
    assert statistic(cloudwatch, "Invocation5XXErrors", "Average") == (0.5, "None")
    assert statistic(cloudwatch, "ModelLatency", "Maximum") == (pytest.approx(6000), "Microseconds")
    assert statistic(cloudwatch, "ModelLatency", "Average") == (pytest.approx(3250), "Microseconds")
    assert statistic(cloudwatch, "OverheadLatency", "Minimum") == (pytest.approx(500), "Microseconds")


def test_flushes_from_several_processes_add_up_per_variant(cloudwatch, access_key, clock, db):  # noqa: F811
    account = access_key.account_id
    first, second = (InvocationMetrics(flush_seconds=3600, background=False) for _ in range(2))
    for metrics in (first, second, first):
        metrics.record(invocation(account), total_seconds=0.003)
        metrics.flush()
    second.record(invocation(account, variant="Canary"), total_seconds=0.003)
    second.flush()

    assert statistic(cloudwatch, "Invocations", "Sum") == (3, "None")
    assert statistic(cloudwatch, "Invocations", "Sum", variant="Canary") == (1, "None")


def test_a_failed_write_is_written_by_the_next_flush(cloudwatch, access_key, clock, db, monkeypatch):  # noqa: F811
    metrics = InvocationMetrics(flush_seconds=3600, background=False)
    metrics.record(invocation(access_key.account_id), total_seconds=0.003)
    real_add = invocation_metrics.add_statistic_sets

    def database_away(sets):
        raise DatabaseError("database is locked")

    monkeypatch.setattr(invocation_metrics, "add_statistic_sets", database_away)
    metrics.flush()
    assert not MetricStatisticSet.objects.exists()

    monkeypatch.setattr(invocation_metrics, "add_statistic_sets", real_add)
    metrics.record(invocation(access_key.account_id), total_seconds=0.003)
    metrics.flush()

    assert statistic(cloudwatch, "Invocations", "Sum") == (2, "None")


def test_the_hot_path_writes_nothing_until_a_flush(access_key, clock, db):  # noqa: F811
    metrics = InvocationMetrics(flush_seconds=3600, background=False)
    for _ in range(100):
        metrics.record(invocation(access_key.account_id), total_seconds=0.003)

    assert not MetricStatisticSet.objects.exists()


def test_latency_percentiles_of_a_minute(cloudwatch, access_key, clock, db):  # noqa: F811
    metrics = InvocationMetrics(flush_seconds=3600, background=False)
    for milliseconds in range(1, 101):  # 1 ms .. 100 ms of model time, 1 ms of overhead each
        model_seconds = milliseconds / 1000
        metrics.record(invocation(access_key.account_id, model_seconds), total_seconds=model_seconds + 0.001)

    metrics.flush()

    response = cloudwatch.get_metric_statistics(
        Namespace="AWS/SageMaker",
        MetricName="ModelLatency",
        Dimensions=[{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": "AllTraffic"}],
        StartTime=MINUTE_START,
        EndTime=MINUTE_START + timedelta(minutes=1),
        Period=60,
        ExtendedStatistics=["p50", "p99"],
    )
    (point,) = response["Datapoints"]
    assert point["ExtendedStatistics"] == {
        "p50": pytest.approx(50_000, rel=0.01),
        "p99": pytest.approx(99_000, rel=0.01),
    }
    assert point["Unit"] == "Microseconds"


def test_a_components_invocations_carry_its_name_as_their_only_dimension(
    cloudwatch, access_key, clock, db  # noqa: F811
):
    metrics = InvocationMetrics(flush_seconds=3600, background=False)
    account = access_key.account_id
    for component in ("small", "small", "large"):
        metrics.record(Invocation(account, REGION, "ep", "AllTraffic", 0.002, 200, component), 0.003)

    metrics.flush()

    def invocations(**dimensions):
        return [point["Sum"] for point in cloudwatch.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName="Invocations", Statistics=["Sum"], Period=60,
            Dimensions=[{"Name": name, "Value": value} for name, value in dimensions.items()],
            StartTime=MINUTE_START, EndTime=MINUTE_START + timedelta(minutes=1),
        )["Datapoints"]]

    assert invocations(InferenceComponentName="small") == [2]
    assert invocations(InferenceComponentName="large") == [1]
    assert invocations(EndpointName="ep", VariantName="AllTraffic") == []


def test_the_component_an_arn_routes_to():
    arn = "arn:aws:sagemaker:us-east-1:123456789012:{}"
    assert components.named_in(arn.format("inference-component/small")) == "small"
    assert components.named_in(arn.format("endpoint/ep")) == ""


class _FlushNoted(InvocationMetrics):
    def __init__(self, noted: "multiprocessing.Queue"):
        super().__init__(flush_seconds=3600)
        self._noted = noted

    def flush(self) -> None:
        self._noted.put(len(self._minutes))


def _serve_one_invocation(noted) -> None:
    _FlushNoted(noted).record(invocation("123456789012"), 0.003)


@pytest.mark.parametrize("process_end", ["a server's worker process", "a process of its own"])
def test_what_a_process_added_up_is_flushed_when_it_ends(process_end, tmp_path):
    # The API's workers are multiprocessing's children (granian's), which end with os._exit:
    # an atexit handler never ran there.
    if process_end == "a server's worker process":
        context = multiprocessing.get_context("fork")
        noted = context.Queue()
        worker = context.Process(target=_serve_one_invocation, args=(noted,))
        worker.start()
        worker.join(timeout=30)
        assert worker.exitcode == 0
        assert noted.get(timeout=30) == 1
    else:
        program = (
            "import django, pathlib, sys\ndjango.setup()\n"
            "from hosting.runtime_api.invocation_metrics import InvocationMetrics, Invocation\n"
            "class Noted(InvocationMetrics):\n"
            "    def flush(self): pathlib.Path(sys.argv[1]).write_text(str(len(self._minutes)))\n"
            "Noted(3600).record(Invocation('123456789012', 'us-east-1', 'ep', 'v', 0.002, 200), 0.003)"
        )
        environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "controlplane.settings",
                       "SAGEPORT_DATA_DIR": str(tmp_path)}
        subprocess.run([sys.executable, "-c", program, str(tmp_path / "noted")], check=True, timeout=60,
                       cwd=Path(__file__).parents[4], env=environment)
        assert (tmp_path / "noted").read_text() == "1"
