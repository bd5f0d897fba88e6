"""A resource's end is told to the registered listeners once its transaction committed; a
listener that fails is logged and the others still hear it."""

import pytest

from reconcile import endings


@pytest.fixture
def listeners(monkeypatch):
    monkeypatch.setattr(endings, "_listeners", [])
    heard: list[str] = []
    endings.register(heard.append)
    return heard


def test_listeners_hear_an_ending_only_once_its_transaction_committed(
    db, listeners, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        endings.ended("job-1")
        assert listeners == []  # not before the commit: the listener's look would miss the end
    assert len(callbacks) == 1
    assert listeners == ["job-1"]


def test_a_failing_listener_is_logged_and_the_others_still_hear(
    db, listeners, django_capture_on_commit_callbacks, caplog
):
    def broken(name: str) -> None:
        raise ConnectionError("broker away")

    endings.register(broken)
    endings.register(listeners.append)  # registered twice: heard once
    with django_capture_on_commit_callbacks(execute=True):
        endings.ended("job-2")
    assert listeners == ["job-2"]
    assert "could not tell" in caplog.text and "job-2" in caplog.text
