"""An endpoint's invocation charts add its variants' per-minute CloudWatch metrics up, and are
empty (the page says so) when no metrics store or no point exists."""

from dataclasses import dataclass
from types import SimpleNamespace

from console import invocation_charts
from tests.unit.console.conftest import ACCOUNT_A, in_service_endpoint

MINUTE = 60_000
NOW = 100 * MINUTE


@dataclass(frozen=True)
class _Sample:
    timestamp_ms: int
    count: float
    total: float


class _Store:
    """The metrics store's reading interface, holding samples per (metric, variant)."""

    def __init__(self, samples: dict[tuple[str, str], list[_Sample]]):
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


def _chart(charts, title):
    return next(chart["points"] for chart in charts if chart["name"] == title)


def test_counts_are_summed_and_latency_averaged_over_the_variants(db, monkeypatch):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    store = _Store(
        {
            ("Invocations", "AllTraffic"): [_Sample(98 * MINUTE, 3, 3), _Sample(99 * MINUTE, 2, 2)],
            ("ModelLatency", "AllTraffic"): [_Sample(98 * MINUTE, 3, 3000 + 6000 + 9000)],
        }
    )
    monkeypatch.setattr(invocation_charts, "metric_queries", store)

    charts = invocation_charts.series(endpoint, NOW)

    assert _chart(charts, "Invocations") == [[98 * MINUTE, 3], [99 * MINUTE, 2]]
    assert _chart(charts, "ModelLatency (ms, average)") == [[98 * MINUTE, 6.0]]  # microseconds in
    assert _chart(charts, "Invocation5XXErrors") == []
    assert set(store.windows) == {(NOW - invocation_charts.WINDOW_MS, NOW + MINUTE)}


def test_without_a_metrics_store_every_chart_is_empty(db, monkeypatch):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    monkeypatch.setattr(invocation_charts, "metric_queries", None)

    charts = invocation_charts.series(endpoint, NOW)

    assert [chart["name"] for chart in charts] == invocation_charts.TITLES
    assert all(chart["points"] == [] for chart in charts)


def test_the_page_offers_the_charts_and_says_when_none_has_points(account_a):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint

    page = account_a.get(f"/console/endpoints/{endpoint.pk}/").content.decode()
    data = account_a.get(f"/console/endpoints/{endpoint.pk}/metrics").json()

    assert all(f'data-chart="{title}"' in page for title in invocation_charts.TITLES)
    assert "No invocation metrics recorded" in page
    assert [chart["name"] for chart in data["series"]] == invocation_charts.TITLES
