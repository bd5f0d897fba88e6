"""Child processes that die with the process that started them, so that a supervisor killed
without a chance to clean up (SIGKILL, OOM) leaves no orphan holding its ports or memory."""
import ctypes
import os
import signal
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec function: the child gets SIGKILL when its parent dies (Linux). Strictly, when the
    THREAD that forked it ends, so fork from a thread that lives as long as the child should."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec
