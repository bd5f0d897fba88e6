"""GPUs given back are told to the listeners once the freeing transaction commits, once per
transaction with the nodes concerned, whoever held them; a listener that fails stops nothing."""
import pytest
from django.db import transaction

from capacity import freed
from capacity.gpus import free_gpus
from capacity.models import Node
from tests.unit.training.test_scheduler import make_job, make_node
from training import scheduler

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def told(monkeypatch) -> list[set[str]]:
    calls = []
    monkeypatch.setattr(freed, "_listeners", [calls.append])
    return calls


def placed_job(count=1):
    job = make_job("ml.p3.2xlarge", count=count)
    assert isinstance(scheduler.place(job), scheduler.Placed)
    return job


def test_a_release_is_told_once_with_its_nodes_after_the_commit(told):
    make_node("node-a", gpus=2)
    first, second = placed_job(), placed_job()
    assert told == []  # placing frees nothing

    with transaction.atomic():
        scheduler.release(first)
        scheduler.release(second)
        assert told == []  # not before the commit: nobody else could take them yet

    assert told == [{"node-a"}]
    assert free_gpus(Node.objects.get(name="node-a")) == ["0", "1"]


def test_a_rolled_back_release_is_not_told_on_its_own(told):
    make_node("node-a", gpus=1)
    job = placed_job()
    with pytest.raises(RuntimeError), transaction.atomic():
        scheduler.release(job)
        raise RuntimeError("rolled back")

    assert told == []
    scheduler.release(job)  # the GPU is freed for real
    assert told == [{"node-a"}]


def test_a_failing_listener_neither_fails_the_release_nor_silences_the_others(monkeypatch):
    make_node("node-a", gpus=1)
    calls = []

    def broken(names):
        raise ConnectionError("broker down")

    monkeypatch.setattr(freed, "_listeners", [broken, calls.append])
    scheduler.release(placed_job())
    assert calls == [{"node-a"}]
