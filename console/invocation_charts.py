"""An endpoint's invocation charts: CloudWatch's per-minute `AWS/SageMaker` metrics of each of its
variants (dimensions EndpointName and VariantName), added up over the variants: Invocations and
the 4xx/5xx errors summed per minute, ModelLatency averaged (in milliseconds).

They are read through the CloudWatch metrics store (`logs.metric_queries`) where this build has
one; without it, or before the first invocation, every chart is empty and the page says so."""

from collections import defaultdict

from hosting.models import Endpoint

try:
    from logs import metric_queries
except ImportError:  # a build without the CloudWatch metrics store
    metric_queries = None

NAMESPACE = "AWS/SageMaker"
WINDOW_MS = 3 * 3600 * 1000  # the last three hours
# (chart title, metric name, how a minute's samples become one value)
CHARTS = [
    ("Invocations", "Invocations", "sum"),
    ("Invocation4XXErrors", "Invocation4XXErrors", "sum"),
    ("Invocation5XXErrors", "Invocation5XXErrors", "sum"),
    ("ModelLatency (ms, average)", "ModelLatency", "average_ms"),
]
TITLES = [title for title, _, _ in CHARTS]


def series(endpoint: Endpoint, now_ms: int) -> list[dict]:
    """One entry per chart: `{"name": title, "points": [[minute ms, value], ...]}`."""
    variants = sorted(
        {
            variant["VariantName"]
            for deployment in endpoint.deployments.all()
            for variant in deployment.snapshot["EndpointConfig"]["ProductionVariants"]
        }
    )
    return [
        {"name": title, "points": _points(endpoint, variants, metric, how, now_ms)}
        for title, metric, how in CHARTS
    ]


def _points(endpoint: Endpoint, variants: list[str], metric: str, how: str, now_ms: int) -> list[list]:
    if metric_queries is None:
        return []
    scope = metric_queries.Scope(endpoint.account_id, endpoint.region)
    minutes: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])  # minute -> [count, total]
    for variant in variants:
        dimensions = [
            {"Name": "EndpointName", "Value": endpoint.endpoint_name},
            {"Name": "VariantName", "Value": variant},
        ]
        metric_id = metric_queries.MetricId.of(NAMESPACE, metric, dimensions)
        samples, _unit = metric_queries.samples(scope, metric_id, now_ms - WINDOW_MS, now_ms + 60_000)
        for sample in samples:
            minutes[sample.timestamp_ms][0] += sample.count
            minutes[sample.timestamp_ms][1] += sample.total
    return [
        [minute, total if how == "sum" else total / count / 1000]  # ModelLatency is in microseconds
        for minute, (count, total) in sorted(minutes.items())
        if count
    ]
