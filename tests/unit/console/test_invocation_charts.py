"""An endpoint's invocation charts take its variants' per-minute CloudWatch metrics together:
counts summed, latencies as p50 and p99 in milliseconds; empty (the page says so) when no
metrics store or no point exists."""

from types import SimpleNamespace

from console import invocation_charts
from logs.statistics import Sample
from tests.unit.console.conftest import ACCOUNT_A, in_service_endpoint
from tests.unit.logs.test_statistics import latency_minute

MINUTE = 60_000
NOW = 100 * MINUTE


def count(minute_ms: int, invocations: int) -> Sample:
    return Sample(minute_ms, invocations, invocations, 1, 1, None)


class _Store:
    """The metrics store's reading interface, holding samples per (metric, variant)."""

    def __init__(self, samples: dict[tuple[str, str], list[Sample]]):
        self._samples = samples
        self.windows = []

    def Scope(self, account_id, region):  # noqa: N802 (the store's class name)
        return (account_id, region)

    @property
    def MetricId(self):  # noqa: N802
        return SimpleNamespace(
            of=lambda namespace, name, dimensions: (
                namespace,
                name,
                tuple((item["Name"], item["Value"]) for item in dimensions),
            )
        )

    def samples(self, scope, metric_id, start_ms, end_ms):
        self.windows.append((start_ms, end_ms))
        namespace, name, dimensions = metric_id
        assert (namespace, scope) == ("AWS/SageMaker", (ACCOUNT_A, "us-east-1"))
        return self._samples.get((name, dict(dimensions)["VariantName"]), []), "Count"


def _lines(charts, title):
    (chart,) = [chart for chart in charts if chart["name"] == title]
    return {line["label"]: line["points"] for line in chart["lines"]}


def test_counts_are_summed_and_latency_shown_as_p50_and_p99_in_milliseconds(db, monkeypatch):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    slow_tail = [1000.0 * index for index in range(1, 100)] + [250_000.0]  # 1..99 ms, one 250 ms
    store = _Store(
        {
            ("Invocations", "AllTraffic"): [count(98 * MINUTE, 3), count(99 * MINUTE, 2)],
            ("ModelLatency", "AllTraffic"): [latency_minute(98 * MINUTE, slow_tail)],
        }
    )
    monkeypatch.setattr(invocation_charts, "metric_queries", store)

    charts = invocation_charts.series(endpoint, NOW)

    assert _lines(charts, "Invocations") == {"Sum": [[98 * MINUTE, 3], [99 * MINUTE, 2]]}
    ((minute, p50),) = _lines(charts, "ModelLatency (ms)")["p50"]
    ((_, p99),) = _lines(charts, "ModelLatency (ms)")["p99"]
    assert minute == 98 * MINUTE
    assert abs(p50 - 50.0) <= 0.5 and abs(p99 - 99.0) <= 1.0  # nearest rank, within 1%
    assert _lines(charts, "Invocation5XXErrors") == {"Sum": []}
    assert _lines(charts, "OverheadLatency (ms)") == {"p50": [], "p99": []}
    assert set(store.windows) == {(NOW - invocation_charts.WINDOW_MS, NOW + MINUTE)}
    kinds = {chart["name"]: (chart["kind"], chart["period_ms"]) for chart in charts}
    assert kinds["Invocations"] == ("count", MINUTE) and kinds["ModelLatency (ms)"] == ("line", MINUTE)


def test_without_a_metrics_store_every_chart_is_empty(db, monkeypatch):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    monkeypatch.setattr(invocation_charts, "metric_queries", None)

    charts = invocation_charts.series(endpoint, NOW)

    assert [chart["name"] for chart in charts] == invocation_charts.TITLES
    assert all(line["points"] == [] for chart in charts for line in chart["lines"])


def test_the_page_offers_the_charts_and_says_when_none_has_points(account_a):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint

    page = account_a.get(f"/console/endpoints/{endpoint.endpoint_name}/").content.decode()
    data = account_a.get(f"/console/endpoints/{endpoint.endpoint_name}/metrics").json()

    assert all(f'data-chart="{title}"' in page for title in invocation_charts.TITLES)
    assert "No invocation metrics recorded" in page
    assert [chart["name"] for chart in data["series"]] == invocation_charts.TITLES
