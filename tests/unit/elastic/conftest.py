import pytest

from elastic import tasks


@pytest.fixture(autouse=True)
def sent_looks(monkeypatch) -> list[tuple[int, float, str | None]]:
    """The looks the operator's side asks for, (job pk, countdown, node queue or None), recorded
    instead of sent: these tests run without a broker and drive the looks themselves."""
    sent = []
    monkeypatch.setattr(tasks, "_enqueue", lambda pk, countdown, node: sent.append((pk, countdown, node)))
    monkeypatch.setattr(tasks.reconcile_hyperpod_job, "delay", lambda pk: sent.append((pk, 0, None)))
    return sent
