"""Reading log groups, streams and events the way the CloudWatch Logs API pages them.

A log group is data: it exists in an account and region as soon as one of its streams does
(`/aws/sagemaker/TrainingJobs`, `/aws/sagemaker/Endpoints/<name>`, ...)."""
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Min, QuerySet, Sum
from django.db.models.functions import Length

from logs import tokens
from logs.models import LogEvent, LogStream
from logs.tokens import BACKWARD, FORWARD, Position
from protocol.arns import parse_arn
from protocol.context import RequestContext
from protocol.errors import InvalidParameterException, ResourceNotFoundException
from protocol.pagination import paginate

# CloudWatch's response bounds: 10,000 events or 1 MiB, counting 26 bytes of overhead per event.
MAX_EVENTS = 10_000
MAX_RESPONSE_BYTES = 1_048_576
EVENT_OVERHEAD_BYTES = 26
# FilterLogEvents stops after examining this many events and returns a nextToken to go on from
# there, as CloudWatch does, so one request's work stays bounded however rare the matches.
FILTER_SCAN_LIMIT = 50_000

GROUP_NOT_FOUND = "The specified log group does not exist."
STREAM_NOT_FOUND = "The specified log stream does not exist."


def group_streams(ctx: RequestContext, params: dict) -> QuerySet[LogStream]:
    """The streams of the group a request names by `logGroupName` or `logGroupIdentifier`."""
    name = _group_name(ctx, params)
    streams = LogStream.objects.filter(account_id=ctx.account_id, region=ctx.region, group_name=name)
    if not streams.exists():
        raise ResourceNotFoundException(GROUP_NOT_FOUND)
    return streams


def _group_name(ctx: RequestContext, params: dict) -> str:
    name, identifier = params.get("logGroupName"), params.get("logGroupIdentifier")
    if name and identifier:
        raise InvalidParameterException("LogGroup name and LogGroup ARN are mutually exclusive parameters.")
    if not name and not identifier:
        raise InvalidParameterException("Either logGroupName or logGroupIdentifier must be specified.")
    if name or not identifier.startswith("arn:"):
        return name or identifier
    arn = parse_arn(identifier)
    if arn.service != "logs" or arn.resource_type != "log-group":
        raise InvalidParameterException(f"logGroupIdentifier '{identifier}' is not a log group ARN.")
    if (arn.account_id, arn.region) != (ctx.account_id, ctx.region):
        raise ResourceNotFoundException(GROUP_NOT_FOUND)  # groups live in one account and region
    return arn.resource_name


def stream_named(streams: QuerySet[LogStream], name: str) -> LogStream:
    stream = streams.filter(stream_name=name).first()
    if stream is None:
        raise ResourceNotFoundException(STREAM_NOT_FOUND)
    return stream


# --- DescribeLogGroups -----------------------------------------------------------------------


@dataclass(frozen=True)
class LogGroup:
    name: str
    created_at: datetime  # when its first stream was
    stored_bytes: int  # the UTF-8 size of the messages it holds


def describe_groups(ctx: RequestContext, params: dict) -> tuple[list[LogGroup], str | None]:
    """One page of the account's groups in name order; `logGroupNamePrefix` or the
    case-insensitive substring `logGroupNamePattern` (not both) narrow them."""
    prefix, pattern = params.get("logGroupNamePrefix"), params.get("logGroupNamePattern")
    if prefix and pattern is not None:
        raise InvalidParameterException(
            "LogGroup name prefix and LogGroup name pattern are mutually exclusive parameters."
        )
    streams = LogStream.objects.filter(account_id=ctx.account_id, region=ctx.region)
    if prefix:
        streams = streams.filter(group_name__startswith=prefix)
    if pattern:
        streams = streams.filter(group_name__icontains=pattern)
    if params.get("logGroupIdentifiers"):
        identifiers = params["logGroupIdentifiers"]
        names = [_group_name(ctx, {"logGroupIdentifier": identifier}) for identifier in identifiers]
        streams = streams.filter(group_name__in=names)
    if params.get("logGroupClass", "STANDARD") != "STANDARD":
        streams = streams.none()  # every group Sageport keeps is of the STANDARD class
    groups = streams.values("group_name").order_by("group_name").annotate(created_at=Min("created_at"))
    page, next_token = paginate(groups, params.get("nextToken"), params.get("limit"), default_max=50)
    sizes = _stored_bytes(ctx, [row["group_name"] for row in page])
    found = [LogGroup(row["group_name"], row["created_at"], sizes.get(row["group_name"], 0)) for row in page]
    return found, next_token


def _stored_bytes(ctx: RequestContext, names: list[str]) -> dict[str, int]:
    """Bytes of the messages in each named group (one page's groups: at most 50)."""
    events = LogEvent.objects.filter(
        stream__account_id=ctx.account_id, stream__region=ctx.region, stream__group_name__in=names
    )
    rows = events.values("stream__group_name").order_by().annotate(size=Sum(Length("message")))
    return {row["stream__group_name"]: row["size"] or 0 for row in rows}


# --- DescribeLogStreams ----------------------------------------------------------------------


def describe_streams(streams: QuerySet[LogStream], params: dict) -> tuple[list[LogStream], str | None]:
    """One page of streams in the requested order; the token only when another page exists."""
    prefix = params.get("logStreamNamePrefix")
    by_time = params.get("orderBy", "LogStreamName") == "LastEventTime"
    if by_time and prefix:
        raise InvalidParameterException("Cannot order by LastEventTime with a logStreamNamePrefix.")
    if prefix:
        streams = streams.filter(stream_name__startswith=prefix)
    descending = params.get("descending", False)
    if by_time:  # streams without events yet sort as the oldest
        last_event = F("last_event_ms")
        key = last_event.desc(nulls_last=True) if descending else last_event.asc(nulls_first=True)
    else:
        key = "-stream_name" if descending else "stream_name"
    ordered = streams.order_by(key, "-pk" if descending else "pk")
    return paginate(ordered, params.get("nextToken"), params.get("limit"), default_max=50)


# --- GetLogEvents ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EventsPage:
    events: list[LogEvent]
    next_forward_token: str
    next_backward_token: str


def get_events(stream: LogStream, params: dict) -> EventsPage:
    """Events of one stream in [startTime, endTime), `limit` at a time, from the head or the tail.

    Without a token the page is the first events (startFromHead) or the last ones; a token
    continues in its own direction from where the page it came with ended."""
    start, end = params.get("startTime"), params.get("endTime")
    window = _time_window(stream.events.all(), start, end, end_inclusive=False)
    limit = params.get("limit") or MAX_EVENTS
    if params.get("nextToken"):
        direction, position = tokens.decode(params["nextToken"])
    elif params.get("startFromHead"):
        direction, position = FORWARD, tokens.START
    else:
        direction, position = BACKWARD, tokens.END
    if direction == FORWARD:
        rows = window.filter(tokens.after(position)).order_by("timestamp_ms", "pk")[:limit]
        events = _within_response_size(rows)
    else:
        rows = window.filter(tokens.before(position)).order_by("-timestamp_ms", "-pk")[:limit]
        events = _within_response_size(rows)[::-1]
    if events:
        first, last = tokens.position_of(events[0]), tokens.position_of(events[-1])
    elif params.get("nextToken"):
        first = last = position  # nothing new: hand the same position back, so the token is stable
    else:
        first, last = tokens.END, tokens.START  # an empty window: following either way sees new events
    return EventsPage(events, tokens.encode(FORWARD, last), tokens.encode(BACKWARD, first))


def _time_window(events: QuerySet[LogEvent], start: int | None, end: int | None, *, end_inclusive: bool):
    if start is not None:
        events = events.filter(timestamp_ms__gte=start)
    if end is not None:
        events = events.filter(**{"timestamp_ms__lte" if end_inclusive else "timestamp_ms__lt": end})
    return events


def _event_size(event: LogEvent) -> int:
    return len(event.message.encode()) + EVENT_OVERHEAD_BYTES


def _within_response_size(rows: Iterable[LogEvent]) -> list[LogEvent]:
    taken, size = [], 0
    for row in rows:
        size += _event_size(row)
        if taken and size > MAX_RESPONSE_BYTES:
            break
        taken.append(row)
    return taken


# --- FilterLogEvents -------------------------------------------------------------------------


def filter_events(
    streams: QuerySet[LogStream], params: dict, matches: Callable[[str], bool]
) -> tuple[list[LogEvent], str | None]:
    """Matching events of the selected streams in [startTime, endTime], interleaved in time order.

    The token is returned while more events remain to be examined: after a full page, or when
    the scan limit stopped the search early (that page may then hold fewer events, even none)."""
    names, prefix = params.get("logStreamNames"), params.get("logStreamNamePrefix")
    if names and prefix:
        raise InvalidParameterException("Cannot specify both logStreamNames and logStreamNamePrefix.")
    if names:
        streams = streams.filter(stream_name__in=names)
    elif prefix:
        streams = streams.filter(stream_name__startswith=prefix)
    position = tokens.START
    if params.get("nextToken"):
        direction, position = tokens.decode(params["nextToken"])
        if direction != FORWARD:
            raise InvalidParameterException("The specified nextToken is invalid.")
    events = LogEvent.objects.filter(stream__in=streams).select_related("stream")
    window = _time_window(events, params.get("startTime"), params.get("endTime"), end_inclusive=True)
    rows = window.filter(tokens.after(position)).order_by("timestamp_ms", "pk")
    found, resume_at = _scan(rows.iterator(chunk_size=1000), matches, params.get("limit") or MAX_EVENTS)
    return found, tokens.encode(FORWARD, resume_at) if resume_at else None


def _scan(
    rows: Iterable[LogEvent], matches: Callable[[str], bool], limit: int
) -> tuple[list[LogEvent], Position | None]:
    """The matching rows that fit one response, and where to resume (None: nothing is left)."""
    found: list[LogEvent] = []
    size = 0
    last_examined = None
    for examined, row in enumerate(rows):
        if examined == FILTER_SCAN_LIMIT:
            return found, tokens.position_of(last_examined)
        last_examined = row
        if not matches(row.message):
            continue
        size += _event_size(row)
        if len(found) == limit or (found and size > MAX_RESPONSE_BYTES):
            return found, tokens.position_of(found[-1])  # this match opens the next page
        found.append(row)
    return found, None
