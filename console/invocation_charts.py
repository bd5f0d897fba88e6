"""An endpoint's invocation charts: CloudWatch's per-minute `AWS/SageMaker` metrics of each of its
variants (dimensions EndpointName and VariantName), taken together over the variants: Invocations
and the 4xx/5xx errors summed per minute, ModelLatency and OverheadLatency as their p50 and p99
(in milliseconds), each minute's statistics computed by `logs.statistics`, as GetMetricStatistics
computes them.

They are read through the CloudWatch metrics store (`logs.metric_queries`) where this build has
one; without it, or before the first invocation, every chart is empty and the page says so."""

from hosting.models import Endpoint

try:
    from logs import metric_queries, statistics
except ImportError:  # a build without the CloudWatch metrics store
    metric_queries = statistics = None

NAMESPACE = "AWS/SageMaker"
WINDOW_MS = 3 * 3600 * 1000  # the last three hours
MINUTE_SECONDS = 60
COUNT_LINES = (("Sum", "Sum"),)
LATENCY_LINES = (("p50", "p50"), ("p99", "p99"))
MICROSECONDS_TO_MS = 1 / 1000
# How console.js draws a chart: counts as bars from zero, the others as lines broken where a
# minute has no value (no invocation that minute), never joined across it.
COUNT, LINE = "count", "line"
# (chart title, metric name, its lines as (label, CloudWatch statistic), scale of the values, kind)
CHARTS = [
    ("Invocations", "Invocations", COUNT_LINES, 1, COUNT),
    ("Invocation4XXErrors", "Invocation4XXErrors", COUNT_LINES, 1, COUNT),
    ("Invocation5XXErrors", "Invocation5XXErrors", COUNT_LINES, 1, COUNT),
    ("ModelLatency (ms)", "ModelLatency", LATENCY_LINES, MICROSECONDS_TO_MS, LINE),
    ("OverheadLatency (ms)", "OverheadLatency", LATENCY_LINES, MICROSECONDS_TO_MS, LINE),
]
TITLES = [title for title, *_ in CHARTS]


def series(endpoint: Endpoint, now_ms: int) -> list[dict]:
    """One entry per chart: `{"name": title, "kind": COUNT or LINE, "period_ms": 60000,
    "lines": [{"label", "points": [[minute ms, value], ...]}]}`."""
    variants = sorted(
        {
            variant["VariantName"]
            for deployment in endpoint.deployments.all()
            for variant in deployment.snapshot["EndpointConfig"]["ProductionVariants"]
        }
    )
    return [
        {
            "name": title, "kind": kind, "period_ms": MINUTE_SECONDS * 1000,
            "lines": _lines(_minutes(endpoint, variants, metric, now_ms), lines, scale),
        }
        for title, metric, lines, scale, kind in CHARTS
    ]


def _minutes(endpoint: Endpoint, variants: list[str], metric: str, now_ms: int) -> dict:
    """The metric's samples of every variant, added up per minute (oldest first)."""
    if metric_queries is None:
        return {}
    scope = metric_queries.Scope(endpoint.account_id, endpoint.region)
    start_ms = statistics.aligned_start_ms(now_ms - WINDOW_MS, MINUTE_SECONDS)
    found = []
    for variant in variants:
        dimensions = [
            {"Name": "EndpointName", "Value": endpoint.endpoint_name},
            {"Name": "VariantName", "Value": variant},
        ]
        metric_id = metric_queries.MetricId.of(NAMESPACE, metric, dimensions)
        samples, _unit = metric_queries.samples(scope, metric_id, start_ms, now_ms + 60_000)
        found.extend(samples)
    return statistics.by_period(found, start_ms, MINUTE_SECONDS)


def _lines(minutes: dict, lines, scale: float) -> list[dict]:
    """Each line's statistic minute by minute; a minute without a value (a percentile of minutes
    written before histograms were kept) is left out."""
    drawn = []
    for label, statistic in lines:
        values = ((minute, aggregate.statistic(statistic)) for minute, aggregate in minutes.items())
        points = [[minute, value * scale] for minute, value in values if value is not None]
        drawn.append({"label": label, "points": points})
    return drawn
