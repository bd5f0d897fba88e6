"""The sweeper: one periodic task (Celery beat, SAGEPORT_SWEEP_INTERVAL_SECONDS) that runs every
registered hook in turn. Each feature registers its share in its AppConfig.ready (re-enqueue what
is overdue, free what ended resources hold, remove orphans), so this package imports no feature.

Hooks run in registration order, which is the order of INSTALLED_APPS."""
from collections.abc import Callable

from celery import shared_task

_hooks: list[Callable[[], None]] = []


def register(hook: Callable[[], None]) -> None:
    if hook not in _hooks:
        _hooks.append(hook)


# The name is the task's name before issue 8 moved it: the beat schedule and queued messages use it.
@shared_task(name="workers.tasks.sweep", ignore_result=True)
def sweep() -> None:
    for hook in _hooks:
        hook()
