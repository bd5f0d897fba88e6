"""GPUs one feature's waiting work may take back from another's, by priority weight, without
either importing the other (training and elastic training register hooks here).

- `reclaim(request)`: work that waits for GPUs asks for them; the features that can give GPUs
  back (elastic training: shrink or evict lower-weight HyperPodPyTorchJobs) start doing so and
  say what is under way, for the waiting work's status message.
- `waiting_weights()`: the weights of work waiting for GPUs now; an elastic job grows only when
  no waiting work weighs as much as it does (waiting work gets freed capacity first).

Weights are the priority classes' (0-100, from CreateClusterSchedulerConfig), compared across the
whole installation: GPUs are shared by every account's work."""
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuRequest:
    gpus: int  # on one node
    weight: int
    requester: str  # who asks, for the log


_reclaimers: list[Callable[[GpuRequest], str | None]] = []
_waiting: list[Callable[[], list[int]]] = []


def register_reclaimer(hook: Callable[[GpuRequest], str | None]) -> None:
    if hook not in _reclaimers:
        _reclaimers.append(hook)


def register_waiting(hook: Callable[[], list[int]]) -> None:
    if hook not in _waiting:
        _waiting.append(hook)


def reclaim(request: GpuRequest) -> str | None:
    """What is being done to free `request.gpus` GPUs for the request; None when nothing can."""
    for hook in _reclaimers:
        message = hook(request)
        if message is not None:
            return message
    return None


def waiting_weights() -> list[int]:
    return [weight for hook in _waiting for weight in hook()]
