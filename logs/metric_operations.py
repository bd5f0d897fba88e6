"""CloudWatch metrics operations (`GraniteServiceVersion20100801.*`, and the same over the query
protocol): GetMetricStatistics, GetMetricData and ListMetrics over the series Sageport records
(training jobs' MetricDefinitions, endpoints' invocation metrics). Metric math expressions are
refused, never evaluated wrongly."""

import math
import time
from datetime import UTC, datetime

from logs import metric_queries, statistics
from logs.metric_queries import MetricId, Scope
from protocol.context import RequestContext
from protocol.errors import (
    InvalidNextToken,
    InvalidParameterCombination,
    InvalidParameterValue,
    ValidationException,
)
from protocol.pagination import paginate
from protocol.registry import CLOUDWATCH, operation

# GetMetricStatistics answers at most this many datapoints (CloudWatch's limit).
MAX_STATISTICS_DATAPOINTS = 1440
DEFAULT_MAX_DATAPOINTS = 100_800
LIST_METRICS_PAGE = 500
RECENTLY_ACTIVE_MS = 3 * 3600 * 1000  # RecentlyActive=PT3H
_HIGH_RESOLUTION_PERIODS = (1, 5, 10, 30)


@operation("GetMetricStatistics", service=CLOUDWATCH)
def get_metric_statistics(ctx: RequestContext, params: dict) -> dict:
    wanted = [*params.get("Statistics", []), *params.get("ExtendedStatistics", [])]
    if not wanted:
        raise InvalidParameterCombination(
            "At least one of the parameters Statistics and ExtendedStatistics must be specified."
        )
    if params.get("Statistics") and params.get("ExtendedStatistics"):
        raise InvalidParameterCombination(
            "The parameters Statistics and ExtendedStatistics are mutually exclusive."
        )
    for name in params.get("ExtendedStatistics", []):
        _check_statistic(name, "ExtendedStatistics")
    start_ms, end_ms = _window(params["StartTime"], params["EndTime"])
    period = _period(params["Period"], "Period")
    requested = math.ceil((end_ms - start_ms) / (period * 1000))
    if requested > MAX_STATISTICS_DATAPOINTS:
        raise InvalidParameterCombination(
            f"You have requested up to {requested} datapoints, which exceeds the limit of "
            f"{MAX_STATISTICS_DATAPOINTS}. You may reduce the datapoints requested by increasing "
            "Period, or decreasing the time range."
        )
    metric = MetricId.of(params["Namespace"], params["MetricName"], params.get("Dimensions", []))
    periods, unit = _periods(ctx, metric, start_ms, end_ms, period, params.get("Unit"))
    return {
        "Label": metric.metric_name,
        "Datapoints": [_datapoint(begins, aggregate, params, unit) for begins, aggregate in periods.items()],
    }


def _datapoint(begins_ms: int, aggregate: statistics.Aggregate, params: dict, unit: str) -> dict:
    point = {"Timestamp": _time(begins_ms), "Unit": unit}
    for name in params.get("Statistics", []):
        point[name] = aggregate.statistic(name)
    extended = {name: aggregate.statistic(name) for name in params.get("ExtendedStatistics", [])}
    extended = {name: value for name, value in extended.items() if value is not None}
    if extended:
        point["ExtendedStatistics"] = extended
    return point


@operation("GetMetricData", service=CLOUDWATCH)
def get_metric_data(ctx: RequestContext, params: dict) -> dict:
    start_ms, end_ms = _window(params["StartTime"], params["EndTime"])
    queries = params["MetricDataQueries"]
    _check_queries(queries)
    descending = params.get("ScanBy", "TimestampDescending") == "TimestampDescending"
    returned = [query for query in queries if query.get("ReturnData", True)]  # others feed no expression
    results = [_query_result(ctx, query, start_ms, end_ms, descending) for query in returned]
    flat = [(index, pair) for index, result in enumerate(results) for pair in result["pairs"]]
    max_datapoints = params.get("MaxDatapoints", DEFAULT_MAX_DATAPOINTS)
    if max_datapoints < 1:
        raise InvalidParameterValue("The parameter MaxDatapoints must be greater than 0.")
    try:
        page, next_token = paginate(flat, params.get("NextToken"), max_datapoints)
    except ValidationException:
        raise InvalidNextToken("The service cannot process the NextToken you provided.") from None
    return {
        "MetricDataResults": _page_results(results, page, next_token is not None),
        "NextToken": next_token,
    }


def _check_queries(queries: list[dict]) -> None:
    ids = [query["Id"] for query in queries]
    for query in queries:
        if query.get("Expression") is not None:
            raise InvalidParameterValue(
                f"The query {query['Id']!r} has an Expression: Sageport does not evaluate metric math "
                "or Metrics Insights queries; ask for each metric with MetricStat."
            )
        if query.get("MetricStat") is None:
            raise InvalidParameterValue(f"The query {query['Id']!r} must have a MetricStat.")
        _check_statistic(query["MetricStat"]["Stat"], f"MetricStat.Stat of query {query['Id']!r}")
        _period(query["MetricStat"]["Period"], f"MetricStat.Period of query {query['Id']!r}")
        if ids.count(query["Id"]) > 1:
            raise InvalidParameterValue(f"The Id {query['Id']!r} is used by more than one query.")
    if not any(query.get("ReturnData", True) for query in queries):
        raise InvalidParameterValue("At least one query must have ReturnData set to true.")


def _query_result(ctx, query: dict, start_ms: int, end_ms: int, descending: bool) -> dict:
    stat = query["MetricStat"]
    metric_spec = stat["Metric"]
    metric = MetricId.of(
        metric_spec["Namespace"], metric_spec["MetricName"], metric_spec.get("Dimensions", [])
    )
    periods, _ = _periods(ctx, metric, start_ms, end_ms, stat["Period"], stat.get("Unit"))
    pairs = [(begins, aggregate.statistic(stat["Stat"])) for begins, aggregate in periods.items()]
    pairs = [(begins, value) for begins, value in pairs if value is not None]
    return {
        "Id": query["Id"],
        "Label": query.get("Label") or metric.metric_name,
        "pairs": pairs[::-1] if descending else pairs,
    }


def _page_results(results: list[dict], page: list, more: bool) -> list[dict]:
    """Each returned query with its datapoints on this page; PartialData while more remain."""
    shown: dict[int, list] = {index: [] for index in range(len(results))}
    for index, pair in page:
        shown[index].append(pair)
    last_index = page[-1][0] if page else -1
    answered = []
    for index, result in enumerate(results):
        pairs = shown[index]
        unfinished = index > last_index or (index == last_index and pairs[-1] != result["pairs"][-1])
        partial = more and bool(result["pairs"]) and unfinished
        answered.append(
            {
                "Id": result["Id"],
                "Label": result["Label"],
                "Timestamps": [_time(begins) for begins, _ in pairs],
                "Values": [value for _, value in pairs],
                "StatusCode": "PartialData" if partial else "Complete",
                "Messages": [],
            }
        )
    return answered


@operation("ListMetrics", service=CLOUDWATCH)
def list_metrics(ctx: RequestContext, params: dict) -> dict:
    since_ms = int(time.time() * 1000) - RECENTLY_ACTIVE_MS if params.get("RecentlyActive") else None
    found = metric_queries.metrics(
        Scope(ctx.account_id, ctx.region), params.get("Namespace"), params.get("MetricName"), since_ms
    )
    filters = [(item["Name"], item.get("Value")) for item in params.get("Dimensions", [])]
    matching = [metric for metric in found if _matches(metric, filters)]
    try:
        page, next_token = paginate(matching, params.get("NextToken"), LIST_METRICS_PAGE)
    except ValidationException:
        raise InvalidParameterValue("The service cannot process the NextToken you provided.") from None
    body = {"Metrics": [metric.as_wire() for metric in page], "NextToken": next_token}
    if params.get("IncludeLinkedAccounts"):  # no linked accounts: every metric is the caller's own
        body["OwningAccounts"] = [ctx.account_id] * len(page)
    return body


def _matches(metric: MetricId, filters: list[tuple[str, str | None]]) -> bool:
    dimensions = dict(metric.dimensions)
    return all(name in dimensions and value in (None, dimensions[name]) for name, value in filters)


# --- shared checks ----------------------------------------------------------------------------


def _window(start: datetime, end: datetime) -> tuple[int, int]:
    if start >= end:
        raise InvalidParameterValue("The parameter StartTime must be less than the parameter EndTime.")
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


def _period(period: int, member: str) -> int:
    if period not in _HIGH_RESOLUTION_PERIODS and period % 60:
        raise InvalidParameterValue(f"The parameter {member} must be 1, 5, 10, 30 or a multiple of 60.")
    return period


def _check_statistic(name: str, member: str) -> None:
    if not statistics.is_supported(name):
        raise InvalidParameterValue(
            f"The value {name!r} for {member} is not supported: Sageport computes "
            f"{', '.join(statistics.BASIC_STATISTICS)} and percentiles p0 to p100 (e.g. p99, p99.9)."
        )


def _periods(ctx, metric: MetricId, start_ms: int, end_ms: int, period: int, unit: str | None):
    """The metric's data in [start, end) added up per period, and its unit; nothing when it has
    no data or the request names another unit."""
    begins = statistics.aligned_start_ms(start_ms, period)
    found, metric_unit = metric_queries.samples(Scope(ctx.account_id, ctx.region), metric, begins, end_ms)
    if metric_unit is None or unit not in (None, metric_unit):
        return {}, unit or "None"
    return statistics.by_period(found, begins, period), metric_unit


def _time(milliseconds: int) -> datetime:
    return datetime.fromtimestamp(milliseconds / 1000, UTC)
