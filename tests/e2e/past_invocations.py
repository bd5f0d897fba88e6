"""Invocation metrics of past minutes, written into the live stack's metrics store as the data
plane's flush writes them (hosting/runtime_api/invocation_metrics.py): the same statistic sets,
added with `logs.metrics.add_statistic_sets`, only dated minutes ago, so that a chart of several
minutes (and a silent one between them) needs no waiting for real minutes to pass.

The store is the stack's database, which this test process does not hold (pytest-django points
it at the test database): the sets are written by a `manage.py shell` child, which reads the
session's settings as the stack's own processes do."""

import json
import subprocess
import sys

from devstack.stack import PROJECT_DIR

OVERHEAD_US = 800.0  # each invocation's time outside the model's exchange
WRITE_FROM_STDIN = "from tests.e2e.past_invocations import write_from_stdin; write_from_stdin()"


def write(account_id: str, region: str, endpoint: str, variant: str, minutes: dict[int, list[float]]) -> None:
    """`minutes`: minute start (ms) → the model latencies (seconds) of that minute's invocations,
    each answered 200 by the model."""
    request = {"scope": [account_id, region, endpoint, variant], "minutes": list(minutes.items())}
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", WRITE_FROM_STDIN],
        cwd=PROJECT_DIR, input=json.dumps(request), text=True, check=True, capture_output=True, timeout=120,
    )


def write_from_stdin() -> None:
    """In the child: the request `write` sent, added to the store."""
    from hosting.runtime_api.invocation_metrics import _Minute, _statistic_sets
    from logs.metrics import add_statistic_sets

    request = json.loads(sys.stdin.read())
    added = {}
    for minute_ms, latencies in request["minutes"]:
        minute = _Minute()
        for seconds in latencies:
            minute.merge(_Minute.one(seconds * 1e6, OVERHEAD_US, 200))
        added[(*request["scope"], "", minute_ms)] = minute
    add_statistic_sets(_statistic_sets(added))
