"""Detached helper processes that run beside a job's containers (Pipe feeders of training and
processing jobs, training's checkpoint sync).

A Celery task must stay short, so work that lasts as long as the job runs in a helper process
of its own, which the reconciler supervises level-triggered: every look at a running job
ensures its helpers run and starts again one that died. A helper has a name and lives in a
directory of the job's workspace:

    <name>.spec    what to run and with what (JSON), written when the job's helpers are defined
    <name>.lock    flock held by the running helper for its whole life
    <name>.pid     the lock holder's pid: whom to signal
    <name>.failed  written by a helper that gave up for good; the job fails with this text
    <name>.log     its output

The lock, not the pid, says whether a helper runs: a lock dies with its process (no stale or
reused pid, no zombie). The launcher (`python -m jobs.sidecars`) takes the lock before it
forks the helper, which inherits it across exec, and writes the helper's pid before it exits:
when `ensure_all` returns the helper holds its lock, and a second launch finds it taken.
Helpers are detached (own session, parented to init), so a worker killed with its process
group leaves them running and the next reconcile finds them alive. A helper must exit by
itself once its workspace is gone."""
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 5.0
_POLL_SECONDS = 0.05
_LAUNCH_TIMEOUT_SECONDS = 30


class HelperFailed(Exception):
    """A helper cannot do its work at all (not a transient error); the job fails with the text."""

# The project root: `python -m <helper module>` runs from there.
_PROJECT_DIR = Path(__file__).resolve().parents[1]

# Issue 8 moved the helpers' modules, and issue 26 moved the Pipe feeder into the shared layer
# (processing jobs have Pipe inputs too). A job that started before a move has spec files naming
# the old module: it is translated where specs are read (`ensure_all`, which restarts a helper).
# Delete this table once no job started before those releases is still running.
_RENAMED_MODULES = {
    "workers.pipe_feeder": "jobs.pipe_feeder",
    "training.data.pipe_feeder": "jobs.pipe_feeder",
    "workers.checkpoint_sync": "training.data.checkpoint_sync",
}


def current_module(module: str) -> str:
    """The module a spec's helper lives in now (see _RENAMED_MODULES)."""
    return _RENAMED_MODULES.get(module, module)


def define(directory: Path, name: str, module: str, spec: dict) -> None:
    """Declare helper `name`: `python -m module` running `run_helper(body)` on `spec`."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(directory / f"{name}.spec", json.dumps({"module": module, "spec": spec}))


def spec_of(directory: Path, name: str) -> dict | None:
    """The spec helper `name` was defined with; None if it was not defined."""
    try:
        return json.loads((directory / f"{name}.spec").read_text())["spec"]
    except FileNotFoundError:
        return None


def ensure_all(directory: Path) -> None:
    """Start every defined helper that does not run, unless it failed for good."""
    for path in sorted(directory.glob("*.spec")):
        name = path.name.removesuffix(".spec")
        if not (directory / f"{name}.failed").exists() and not running(directory, name):
            _start(directory, name, current_module(json.loads(path.read_text())["module"]))


def running(directory: Path, name: str) -> bool:
    lock_path = directory / f"{name}.lock"
    if not lock_path.exists():
        return False
    with open(lock_path, "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def failure(directory: Path) -> str | None:
    """The text of the first helper that failed for good, if one did."""
    for path in sorted(directory.glob("*.failed")):
        return path.read_text(errors="replace")
    return None


def stop_all(directory: Path) -> None:
    """SIGTERM every running helper in `directory`, SIGKILL those still there after a grace
    period; returns once none runs (their locks are free)."""
    names = [path.stem for path in directory.glob("*.lock")]
    _signal_running(directory, names, signal.SIGTERM)
    if _wait_until_stopped(directory, names, STOP_GRACE_SECONDS):
        return
    _signal_running(directory, names, signal.SIGKILL)
    _wait_until_stopped(directory, names, STOP_GRACE_SECONDS)


def _start(directory: Path, name: str, module: str) -> None:
    with open(directory / f"{name}.log", "ab") as output:
        launcher = subprocess.Popen(
            [sys.executable, "-m", __name__, str(directory), name, module],
            cwd=_PROJECT_DIR, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    launcher.wait(_LAUNCH_TIMEOUT_SECONDS)
    log.info("started helper %s in %s", name, directory)


def _signal_running(directory: Path, names: list[str], sig: int) -> None:
    for name in names:
        if not running(directory, name):
            continue
        try:
            os.kill(int((directory / f"{name}.pid").read_text()), sig)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            pass  # it exited meanwhile: nothing left to signal


def _wait_until_stopped(directory: Path, names: list[str], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while any(running(directory, name) for name in names):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True


def _launch(directory: Path, name: str, module: str) -> None:
    """The launcher's work, in a fresh interpreter that imports nothing else: lock, fork, record
    the child's pid, exit. The child is orphaned to init, so no worker process ever reaps it."""
    lock = os.open(directory / f"{name}.lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # a copy already runs
    child = os.fork()
    if child:
        write_atomically(directory / f"{name}.pid", str(child))
        os._exit(0)
    os.set_inheritable(lock, True)  # the helper holds the lock until it exits
    os.execv(sys.executable, [sys.executable, "-m", module, str(directory), name])


# --- The helper's side ----------------------------------------------------------------------


def run_helper(body: Callable[[dict], None]) -> None:
    """The main of a helper: `python -m <module> <directory> <name>`, started by the launcher
    (which holds the lock for it). Runs `body(spec)`; a HelperFailed is recorded for the job."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    django.setup()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    directory, name = Path(sys.argv[1]), sys.argv[2]
    try:
        body(spec_of(directory, name))
    except HelperFailed as exc:
        log.error("helper %s failed: %s", name, exc)
        write_atomically(directory / f"{name}.failed", str(exc))


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(path)


if __name__ == "__main__":
    _launch(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
