"""GPUs given back, told as it happens: work that waits for capacity (an elastic job that may grow,
a pending one, one short of replicas) is looked at when GPUs are freed, not at its next poll.

Every GPU is a `GpuAllocation` row, deleted with its holder (a training instance's placement, a
serving container, an elastic replica), whichever feature frees it; so the deletion of the row
is the one place to hear it, without any feature calling here. The listeners run once the
freeing transaction commits (before that, nobody else can take the GPUs), with the names of
the nodes whose GPUs were freed, once per transaction however many rows it deleted. A listener
that fails is logged: the waiting work's own poll still finds the capacity. Being told is a
hint, never a promise: a rolled-back deletion's nodes are told with the thread's next commit
that frees GPUs (a look too many, which finds nothing to do)."""
import logging
import threading
from collections.abc import Callable

from django.db import transaction
from django.db.models.signals import post_delete

from capacity.models import GpuAllocation, Node

log = logging.getLogger(__name__)

Listener = Callable[[set[str]], None]

_listeners: list[Listener] = []
# The ids of the nodes freed by the current thread's transaction, told on its commit.
_pending = threading.local()


def on_freed(listener: Listener) -> None:
    """`listener(node_names)` runs after each commit that freed GPUs of those nodes."""
    if listener not in _listeners:
        _listeners.append(listener)


def _allocation_deleted(sender, instance: GpuAllocation, **kwargs) -> None:
    _freed_here().add(instance.node_id)
    transaction.on_commit(_tell)  # the first callback of the transaction tells; the others find nothing


def _freed_here() -> set[int]:
    if not hasattr(_pending, "node_ids"):
        _pending.node_ids = set()
    return _pending.node_ids


def _tell() -> None:
    freed = _freed_here()
    if not freed:
        return
    names = set(Node.objects.filter(pk__in=freed).values_list("name", flat=True))
    freed.clear()
    for listener in _listeners:
        try:
            listener(names)
        except Exception:  # a broker down: the listeners' own polls find the capacity later
            log.exception("could not tell %s that GPUs were freed on %s", listener.__name__, sorted(names))


post_delete.connect(_allocation_deleted, sender=GpuAllocation, dispatch_uid="capacity.freed")
