"""Positions in a log's event order and the opaque tokens that carry them to clients.

Events are ordered by (timestamp, id): the id breaks ties between events stamped in the same
millisecond and, being assigned on insert, keeps that order stable as events are added. A
token names a direction (`f` forward, `b` backward) and the position the next page starts
from, exclusive; so passing back a forward token when nothing new exists yields the same token,
which the SageMaker SDK and `aws logs tail` rely on to know they are caught up."""
import re
from dataclasses import dataclass

from django.db.models import Q

from protocol.errors import InvalidParameterException

FORWARD = "f"
BACKWARD = "b"
_TOKEN = re.compile(r"^(?P<direction>[fb])/(?P<timestamp>-?\d{1,19})/(?P<event_id>\d{1,19})$")


@dataclass(frozen=True)
class Position:
    timestamp_ms: int
    event_id: int


START = Position(-1, 0)  # before every event: timestamps are never negative
END = Position(2**63 - 1, 0)  # after every event
_MAX_ID = 2**63 - 1


def position_of(event) -> Position:
    return Position(event.timestamp_ms, event.pk)


# The plain range bound in each condition lets the database seek the (stream, timestamp) index
# to the position instead of walking the stream from its start.


def after(position: Position) -> Q:
    """Events later than `position` in (timestamp, id) order."""
    ts, event_id = position.timestamp_ms, position.event_id
    return Q(timestamp_ms__gte=ts) & (Q(timestamp_ms__gt=ts) | Q(pk__gt=event_id))


def before(position: Position) -> Q:
    ts, event_id = position.timestamp_ms, position.event_id
    return Q(timestamp_ms__lte=ts) & (Q(timestamp_ms__lt=ts) | Q(pk__lt=event_id))


def encode(direction: str, position: Position) -> str:
    return f"{direction}/{position.timestamp_ms}/{position.event_id}"


def decode(token: str) -> tuple[str, Position]:
    match = _TOKEN.match(token)
    if match is None:
        raise _invalid_token()
    position = Position(int(match["timestamp"]), int(match["event_id"]))
    # Nineteen digits can still overflow a 64-bit column: no token from here holds such a position.
    if not START.timestamp_ms <= position.timestamp_ms <= END.timestamp_ms or position.event_id > _MAX_ID:
        raise _invalid_token()
    return match["direction"], position


def _invalid_token() -> InvalidParameterException:
    return InvalidParameterException("The specified nextToken is invalid.")
