"""What the pages' scripts poll: new log lines of a stream and the points of metric series, each
answer bounded, read through the CloudWatch Logs queries and the metric store the API uses."""

from datetime import UTC, datetime

from django.http import HttpResponse, JsonResponse, QueryDict, StreamingHttpResponse

from logs import metrics, queries
from logs.models import LogStream
from protocol.context import RequestContext
from protocol.errors import ResourceNotFoundException, ServiceError

# Lines per answer: the first answer shows the stream's last lines, later ones what came since.
MAX_LINES = 500
# A search's matches per answer, and how many of FilterLogEvents' bounded scans it may take.
MAX_MATCHES = 200
SEARCH_STEPS = 20
DOWNLOAD_PAGE_LINES = 5000
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


def log_lines(ctx: RequestContext, group: str, prefix: str, query: QueryDict) -> HttpResponse:
    """What a log panel asks of one stream (`stream`), as JSON `{"events": [{"t": ms, "m": text}],
    ...}` unless it is a download:
    - nothing else: the stream's last lines, `token` to follow it and `back` to page back;
    - `token`: the lines after it (the same token again when nothing is new);
    - `before` (a `back`): the page of lines before it, and the `back` of the page before that;
    - `q`: the stream's lines holding that text, any case, from its start (`more`: there are more);
    - `download=1`: the whole stream as a text file, one `<ISO time> <line>` per line."""
    name = query.get("stream", "")
    if not name.startswith(prefix):
        return JsonResponse({"error": "No such log stream."}, status=404)
    try:
        stream = queries.stream_named(queries.group_streams(ctx, {"logGroupName": group}), name)
        if query.get("download"):
            return _download(stream)
        if query.get("q"):
            return _search(stream, query["q"])
        token = query.get("before") or query.get("token")
        page = queries.get_events(stream, {"limit": MAX_LINES, **({"nextToken": token} if token else {})})
    except ServiceError as error:
        status = 404 if isinstance(error, ResourceNotFoundException) else 400  # else: a bad token
        return JsonResponse({"error": error.message}, status=status)
    return JsonResponse({
        "events": _events(page.events),
        "token": page.next_forward_token,
        "back": page.next_backward_token,
    })


def _events(events) -> list[dict]:
    return [{"t": event.timestamp_ms, "m": event.message} for event in events]


def _search(stream, text: str) -> JsonResponse:
    """Up to MAX_MATCHES lines holding `text`, scanning the stream in FilterLogEvents' bounded steps
    (SEARCH_STEPS of them at most: `more` says where it stopped early)."""
    needle = text.lower()
    found, token = [], None
    for _ in range(SEARCH_STEPS):
        params = {"limit": MAX_MATCHES - len(found), **({"nextToken": token} if token else {})}
        events, token = queries.filter_events(
            LogStream.objects.filter(pk=stream.pk), params, lambda message: needle in message.lower()
        )
        found.extend(events)
        if token is None or len(found) >= MAX_MATCHES:
            break
    return JsonResponse({"events": _events(found), "more": token is not None})


def _download(stream) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_text_of(stream), content_type="text/plain; charset=utf-8")
    filename = stream.stream_name.replace("/", "_").replace('"', "")
    response["Content-Disposition"] = f'attachment; filename="{filename}.log"'
    return response


def _text_of(stream):
    """The stream's lines from its start, a bounded page at a time (never all in memory)."""
    params = {"startFromHead": True, "limit": DOWNLOAD_PAGE_LINES}
    while True:
        page = queries.get_events(stream, params)
        if not page.events:
            return
        yield "".join(f"{_iso(event.timestamp_ms)} {event.message}\n" for event in page.events).encode()
        params = {"nextToken": page.next_forward_token, "limit": DOWNLOAD_PAGE_LINES}


def _iso(timestamp_ms: int) -> str:
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def series(key: metrics.SeriesKey, names: list[str]) -> list[dict]:
    """One entry per metric, in the given order: `{"name", "points": [[ms, value], ...]}`."""
    return [{"name": name, "points": _points(key, name)} for name in names]


def _points(key: metrics.SeriesKey, name: str) -> list[list]:
    return [[point.timestamp_ms, point.value] for point in metrics.history(key, name, MAX_POINTS)]
