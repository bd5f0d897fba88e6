"""A clock that skips ahead through long sleeps, for the recipes of tests/e2e/test_egress.py
(sitecustomize loads it where SAGEPORT_SKIP_AHEAD_SLEEPS is set).

The SageMaker SDK waits on fixed intervals, which made most of those tests' time: the v2 SDK
sleeps 30 s before each DescribeEndpoint while it deploys (session.wait_for_endpoint) and, while it
tails a training or transform job's logs, polls them every 10 s and calls Describe only once 30 s
have passed (session.logs_for_job). Here `time.sleep(s)` waits at most MAX_REAL_WAIT and moves
`time.time` and `time.monotonic` on by the rest, so the program sees as much time pass as it asked
for: its loops run as written and make the same calls, only sooner. Request signing reads the
date from `datetime`, which keeps the real time."""

import threading
import time

MAX_REAL_WAIT = 0.5  # seconds: a poll loop still gives the stack time to move between its calls

_real_sleep, _real_time, _real_monotonic = time.sleep, time.time, time.monotonic
_skipped = 0.0  # seconds the clock has moved on beyond the real time
_skipping = threading.Lock()  # two threads' sleeps must not lose a skip: the clock never goes back


def _sleep(seconds: float) -> None:
    global _skipped
    waited = min(seconds, MAX_REAL_WAIT)
    _real_sleep(waited)
    with _skipping:
        _skipped += seconds - waited


def _time() -> float:
    return _real_time() + _skipped


def _monotonic() -> float:
    return _real_monotonic() + _skipped


time.sleep, time.time, time.monotonic = _sleep, _time, _monotonic
