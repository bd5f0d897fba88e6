"""The Supervisor with tiny child programs: restarts with backoff, a quiet shutdown, and a
listening socket that keeps accepting connections while its server restarts."""
import signal
import socket
import subprocess
import sys
import time

import pytest

from devstack import stack
from devstack.stack import LOOPBACK, ServiceSpec, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
# Answers each connection on the inherited listening socket (fd in argv[1]) with "hello".
ECHO_SERVER = [sys.executable, "-c", """
import socket, sys
listener = socket.socket(fileno=int(sys.argv[1]))
while True:
    connection, _ = listener.accept()
    connection.sendall(b"hello")
    connection.close()
"""]
# Ready once its handler is set; on SIGTERM, marks itself stopping (argv[1]) and exits only once its
# peer (argv[2]) is stopping too.
WAITS_FOR_ITS_PEER_TO_STOP = [sys.executable, "-c", """
import pathlib, signal, sys, time
me, peer = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def stop(*_):
    me.touch()
    while not peer.exists():
        time.sleep(0.01)
    me.with_suffix(".done").touch()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
me.with_suffix(".ready").touch()
while True:
    time.sleep(60)
"""]
DEADLINE_SECONDS = 15


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch):
    monkeypatch.setattr(stack, "RESTART_DELAY_SECONDS", 0.05)


@pytest.fixture
def reports():
    return []


@pytest.fixture
def supervisor(tmp_path, reports):
    supervisor = Supervisor(tmp_path / "logs", report=reports.append)
    yield supervisor
    supervisor.stop_all()


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_child_killed_with_sigkill_is_restarted_and_the_restart_is_reported(supervisor, reports):
    supervisor.start(ServiceSpec(name="sleeper", argv=SLEEPER))
    first_pid = supervisor.pid("sleeper")

    with supervisor.watching():
        supervisor.signal("sleeper", signal.SIGKILL)
        wait_until(lambda: supervisor.pid("sleeper") not in (None, first_pid), "the sleeper runs again")
        # Inside the block: a child restarted by the watcher thread dies with that thread.
        assert alive(supervisor.pid("sleeper"))

    assert reports[0].startswith("sleeper was killed by SIGKILL; restart #1 in 0.05s")
    assert reports[1].startswith("sleeper restarted (restart #1, pid ")


def test_a_child_that_keeps_dying_is_restarted_ever_more_slowly(supervisor, reports):
    supervisor.start(ServiceSpec(name="crasher", argv=["sh", "-c", "sleep 0.2; exit 3"]))

    with supervisor.watching():
        wait_until(lambda: sum("exited with status 3" in line for line in reports) >= 3, "three deaths")

    deaths = [line for line in reports if "exited with status 3" in line]
    assert deaths[0].startswith("crasher exited with status 3; restart #1 in 0.05s")
    assert deaths[1].startswith("crasher exited with status 3; restart #2 in 0.1s")
    assert deaths[2].startswith("crasher exited with status 3; restart #3 in 0.2s")


def test_backoff_doubles_up_to_its_ceiling():
    delays = [stack.restart_delay(n) for n in range(12)]

    assert delays[:3] == [0.05, 0.1, 0.2]
    assert delays == sorted(delays)
    assert delays[-1] == stack.MAX_RESTART_DELAY_SECONDS


def test_backoff_starts_over_once_a_child_has_stayed_up(supervisor, reports, monkeypatch):
    monkeypatch.setattr(stack, "STABLE_SECONDS", 0.5)
    supervisor.start(ServiceSpec(name="sleeper", argv=SLEEPER))

    with supervisor.watching():
        for kill in range(2):
            pid = supervisor.pid("sleeper")
            supervisor.signal("sleeper", signal.SIGKILL)
            wait_until(lambda pid=pid: supervisor.pid("sleeper") not in (None, pid), f"restart {kill}")
            time.sleep(1.0)  # longer than STABLE_SECONDS: the next death is a first one again

    deaths = [line for line in reports if "was killed" in line]
    assert [line.split(";")[1].split(" in ")[0] for line in deaths] == [" restart #1", " restart #1"]


def test_a_child_that_stops_answering_is_killed_and_restarted(supervisor, reports, monkeypatch, tmp_path):
    """It runs on, but its probe goes unanswered: after LIVENESS_MISSES misses it is killed, and
    so restarted. While it answers, probes leave it alone."""
    monkeypatch.setattr(stack, "LIVENESS_SECONDS", 0.05)
    hung, probes = tmp_path / "hung", []

    def answers() -> bool:
        probes.append(time.monotonic())
        return not hung.exists()

    supervisor.start(ServiceSpec(name="sleeper", argv=SLEEPER, alive=answers))
    first_pid = supervisor.pid("sleeper")

    with supervisor.watching():
        wait_until(lambda: len(probes) >= 2 * stack.LIVENESS_MISSES, "several answered probes")
        assert supervisor.pid("sleeper") == first_pid and reports == []
        hung.touch()
        wait_until(lambda: supervisor.pid("sleeper") not in (None, first_pid), "the sleeper runs again")
        hung.unlink()
        assert alive(supervisor.pid("sleeper"))

    assert reports[0] == (f"sleeper stopped answering ({stack.LIVENESS_MISSES} checks 0.05s apart "
                          "missed); killing it to restart it")
    assert reports[1].startswith("sleeper was killed by SIGKILL; restart #1")
    assert reports[2].startswith("sleeper restarted (restart #1, pid ")
    assert not alive(first_pid)


def test_stopping_the_stack_restarts_nothing(supervisor, reports):
    pids = []
    for name in ("first", "second"):
        supervisor.start(ServiceSpec(name=name, argv=SLEEPER, stop_timeout=DEADLINE_SECONDS))
        pids.append(supervisor.pid(name))

    with supervisor.watching():
        supervisor.stop_all()
        time.sleep(0.5)  # several supervision rounds

    assert reports == []
    assert not any(alive(pid) for pid in pids)


def test_children_stopped_together_shut_down_at_the_same_time(supervisor, tmp_path):
    """Each child exits on its own only once the other is stopping: one after the other, the first
    would be killed at its stop_timeout. A name the supervisor does not run is passed over."""
    first, second = tmp_path / "first", tmp_path / "second"
    for me, peer in ((first, second), (second, first)):
        supervisor.start(ServiceSpec(name=me.name, argv=[*WAITS_FOR_ITS_PEER_TO_STOP, str(me), str(peer)],
                                     ready=me.with_suffix(".ready").exists, stop_timeout=DEADLINE_SECONDS))

    supervisor.stop_together(["first", "second", "never-started"])

    assert first.with_suffix(".done").exists() and second.with_suffix(".done").exists()
    with pytest.raises(KeyError):
        supervisor.pid("first")


def test_a_child_killed_for_good_is_not_restarted(supervisor, reports):
    supervisor.start(ServiceSpec(name="sleeper", argv=SLEEPER))
    pid = supervisor.pid("sleeper")

    with supervisor.watching():
        supervisor.kill("sleeper")
        time.sleep(0.5)

    assert reports == []
    assert not alive(pid)
    with pytest.raises(KeyError):
        supervisor.pid("sleeper")


def test_connections_wait_in_the_backlog_while_the_server_restarts(supervisor, monkeypatch, reports):
    monkeypatch.setattr(stack, "RESTART_DELAY_SECONDS", 1.0)  # the server is surely down a while
    port = stack.free_port()
    (listener,) = stack._listening_sockets("echo", LOOPBACK, port)
    echo = ServiceSpec(name="echo", argv=[*ECHO_SERVER, str(listener.fileno())], listeners=(listener,))
    supervisor.start(echo)

    with supervisor.watching():
        supervisor.signal("echo", signal.SIGKILL)
        wait_until(lambda: reports, "the death is noticed")
        # No server runs now: the connection is accepted by the kernel and answered after the restart.
        with socket.create_connection((LOOPBACK, port), timeout=DEADLINE_SECONDS) as connection:
            assert connection.recv(5) == b"hello"

    assert "echo restarted" in reports[-1]


def test_a_port_in_use_is_refused_before_anything_starts():
    with socket.socket() as other:
        other.bind((LOOPBACK, 0))
        other.listen()
        port = other.getsockname()[1]

        with pytest.raises(stack.ServiceFailed, match="is taken"):
            stack.api_spec(stack.PROJECT_DIR, stack.LOOPBACK, port)


def test_children_die_with_the_supervisor(tmp_path):
    """A supervisor killed with SIGKILL leaves no orphan holding a port or a file."""
    program = (
        "import sys, time; from pathlib import Path; from devstack.stack import Supervisor, ServiceSpec; "
        "s = Supervisor(Path(sys.argv[1])); "
        f"s.start(ServiceSpec(name='sleeper', argv={SLEEPER!r})); "
        "print(s.pid('sleeper'), flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", program, str(tmp_path)],
        cwd=stack.PROJECT_DIR, stdout=subprocess.PIPE, text=True,
    )
    try:
        child_pid = int(parent.stdout.readline())
        assert alive(child_pid)
    finally:
        parent.kill()
        parent.wait()

    wait_until(lambda: not alive(child_pid), "the orphan is gone")
