"""What a job page says of a stop under way or done: when SIGTERM went, when SIGKILL comes (a
countdown the live page refreshes), and whether the containers had to be killed."""

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class StopProgress:
    signalled_at: datetime
    kill_at: datetime  # when the grace ends
    killed_at: datetime | None
    seconds_left: int  # before the grace ends; 0 once it did
    grace_seconds: int
    ended: bool


def of(signalled_at: datetime | None, killed_at: datetime | None, grace_seconds: int, ended: bool,
       now: datetime) -> StopProgress | None:
    """None while no SIGTERM was sent."""
    if signalled_at is None:
        return None
    kill_at = signalled_at + timedelta(seconds=grace_seconds)
    left = max(0, int((kill_at - now).total_seconds() + 0.999))
    return StopProgress(signalled_at, kill_at, killed_at, left, grace_seconds, ended)
