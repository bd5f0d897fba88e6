"""How long each phase of a container job may take, so that no job stays in one forever.

The phases where the platform does the work (preparing the start, staging the inputs, stopping,
uploading the outputs) each have a deadline in the settings; a job past it fails with an
`InternalServerError` FailureReason that names the phase, whatever kept it there (an engine
that does not answer, storage that hangs, a bug that makes every step fail). When a phase began
is the feature's to say (its status history); the rule and the wording are shared."""
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings


@dataclass(frozen=True)
class Phase:
    work: str  # what did not finish, for the FailureReason
    settings_names: tuple[str, ...]  # the limit is their sum

    def limit_seconds(self) -> float:
        return sum(getattr(settings, name) for name in self.settings_names)


def overdue(phase: Phase, began: datetime | None, now: datetime) -> str | None:
    """The FailureReason when a job that entered `phase` at `began` (None: not yet) is past it."""
    if began is None:
        return None
    limit = phase.limit_seconds()
    if now - began <= timedelta(seconds=limit):
        return None
    return f"InternalServerError: {phase.work} did not finish within {limit:g} seconds."
