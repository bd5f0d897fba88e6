"""What the pages' scripts poll: new log lines of a stream and the points of metric series, each
answer bounded, read through the CloudWatch Logs queries and the metric store the API uses."""

from django.http import HttpResponse, JsonResponse

from logs import metrics, queries
from protocol.context import RequestContext
from protocol.errors import ResourceNotFoundException, ServiceError

# Lines per answer: the first answer shows the stream's last lines, later ones what came since.
MAX_LINES = 500
# Points per chart: the newest ones (a chart of a long job thins nothing, it shows the latest).
MAX_POINTS = 2000


def streams(ctx: RequestContext, group: str, prefix: str) -> list[str]:
    """The names of a group's streams that start with `prefix` (a job's or an endpoint's)."""
    try:
        rows = queries.group_streams(ctx, {"logGroupName": group})
    except ResourceNotFoundException:
        return []  # no line written yet
    named = rows.filter(stream_name__startswith=prefix).order_by("stream_name")
    return list(named.values_list("stream_name", flat=True))


def log_lines(ctx: RequestContext, group: str, prefix: str, stream_name: str, token: str) -> HttpResponse:
    """JSON `{"events": [{"t": ms, "m": text}], "token": ...}`: without a token the last lines of
    the stream, with one the lines after it (the same token again when nothing is new)."""
    if not stream_name.startswith(prefix):
        return JsonResponse({"error": "No such log stream."}, status=404)
    try:
        stream = queries.stream_named(queries.group_streams(ctx, {"logGroupName": group}), stream_name)
        params = {"limit": MAX_LINES, **({"nextToken": token} if token else {})}
        page = queries.get_events(stream, params)
    except ServiceError as error:
        status = 404 if isinstance(error, ResourceNotFoundException) else 400  # else: a bad token
        return JsonResponse({"error": error.message}, status=status)
    events = [{"t": event.timestamp_ms, "m": event.message} for event in page.events]
    return JsonResponse({"events": events, "token": page.next_forward_token})


def series(key: metrics.SeriesKey, names: list[str]) -> list[dict]:
    """One entry per metric, in the given order: `{"name", "points": [[ms, value], ...]}`."""
    return [{"name": name, "points": _points(key, name)} for name in names]


def _points(key: metrics.SeriesKey, name: str) -> list[list]:
    return [[point.timestamp_ms, point.value] for point in metrics.history(key, name, MAX_POINTS)]
