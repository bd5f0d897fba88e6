"""Client programs run as a user runs them, under the egress guard (egress_guard/sitecustomize.py):
the stack's env file is their only configuration (a fresh HOME: no AWS or SDK configuration of
this machine's user), and every attempt they make to leave loopback is refused and recorded."""

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from devstack.stack import PROJECT_DIR
from tests.conftest import read_env_file

GUARD_DIR = Path(__file__).parent / "egress_guard"


@dataclass
class GuardedRun:
    completed: subprocess.CompletedProcess
    attempts: list[dict]  # what the guard refused, in order

    def report(self) -> str:
        destinations = sorted({f"{attempt['host']}:{attempt['port']}" for attempt in self.attempts})
        return (f"{len(self.attempts)} attempts to leave the machine {destinations}\n"
                + "\n".join(json.dumps(attempt) for attempt in self.attempts)
                + f"\n--- stdout ---\n{self.completed.stdout[-3000:]}"
                + f"\n--- stderr ---\n{self.completed.stderr[-3000:]}")


class GuardedRunner:
    """Runs programs with `env_file`'s variables (none without one: a shell recipe that sources
    the file itself), PATH, a HOME of its own and the guard; with `skip_ahead_sleeps`, also the
    clock that skips through their long sleeps (egress_guard/skip_ahead_clock.py)."""

    def __init__(self, env_file: Path | None, work_dir: Path, skip_ahead_sleeps: bool = False):
        self.log = work_dir / "egress.jsonl"
        home = work_dir / "home"
        home.mkdir(exist_ok=True)
        self.env = {
            **(read_env_file(env_file) if env_file else {}),
            "PATH": os.environ["PATH"], "HOME": str(home),
            "PYTHONPATH": str(GUARD_DIR), "SAGEPORT_EGRESS_LOG": str(self.log),
        }
        if skip_ahead_sleeps:
            self.env["SAGEPORT_SKIP_AHEAD_SLEEPS"] = "1"

    def __call__(self, *command: str, cwd: Path = PROJECT_DIR, timeout: float = 480) -> GuardedRun:
        self.log.unlink(missing_ok=True)
        completed = subprocess.run(
            command, env=self.env, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        run = GuardedRun(completed, [json.loads(line) for line in lines])
        label = " ".join("<program>" if "\n" in part else part for part in command)
        print(f"\n{label}: {run.report().splitlines()[0]}")  # the count, in -s output
        return run
