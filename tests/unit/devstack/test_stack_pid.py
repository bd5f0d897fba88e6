"""scripts/stack-pid.sh, which `make up` and `make down` use to tell a running stack from a pid
file that a crash left behind."""
import subprocess
import sys

import pytest

from devstack.stack import PROJECT_DIR

LOOKUP = 'source scripts/stack-pid.sh; running_stack_pid "$1"'


def running_stack_pid(pid_file) -> str | None:
    completed = subprocess.run(
        ["bash", "-c", LOOKUP, "lookup", str(pid_file)], cwd=PROJECT_DIR, capture_output=True, text=True
    )
    return completed.stdout.strip() if completed.returncode == 0 else None


@pytest.fixture
def process():
    started = []

    def start(*argv: str) -> int:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv]))
        return started[-1].pid

    yield start
    for child in started:
        child.kill()
        child.wait()


def test_a_running_supervisor_is_found(tmp_path, process):
    pid = process("manage.py", "runstack")
    (tmp_path / "sageport.pid").write_text(f"{pid}\n")

    assert running_stack_pid(tmp_path / "sageport.pid") == str(pid)


def test_the_pid_of_a_crashed_supervisor_is_stale(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "sageport.pid").write_text(f"{dead.pid}\n")

    assert running_stack_pid(tmp_path / "sageport.pid") is None


def test_a_pid_reused_by_another_program_is_stale(tmp_path, process):
    pid = process("something", "else")
    (tmp_path / "sageport.pid").write_text(f"{pid}\n")

    assert running_stack_pid(tmp_path / "sageport.pid") is None


@pytest.mark.parametrize("content", [None, "", "12x\n", "1 2\n"])
def test_a_missing_or_garbled_pid_file_is_not_a_running_stack(tmp_path, content):
    if content is not None:
        (tmp_path / "sageport.pid").write_text(content)

    assert running_stack_pid(tmp_path / "sageport.pid") is None
