"""The container events watcher (reconcile/container_events.py): which event nudges which
resource, that a stream broken off or an engine away never ends the watcher, and that a training
job whose container exits is looked at at once instead of at its next poll. Driven through the
fake runtime, whose event stream ends after the events told so far (as when the engine goes
away)."""

import threading

import pytest

from reconcile import container_events
from runtime import labels
from runtime.base import ContainerEvent, ContainerSpec
from runtime.fake import FakeRuntime
from tests.unit.fake_storage import FakeStore
from tests.unit.training.test_reconciler_steps import IMAGE, new_job, until_training
from tests.unit.training.test_scheduler import make_node
from training import reconciler as training
from training import tasks
from training import transitions as t
from training.models import TrainingJob

THIS_NODE = "node-here"
ROLE = "probe-role"


@pytest.fixture
def nudged(monkeypatch) -> list[str]:
    """The resources nudged through a role registered for this test (die and health_status)."""
    seen: list[str] = []
    monkeypatch.setattr(container_events, "_interests", {})
    container_events.register(ROLE, seen.append, actions=("die", "health_status"))
    return seen


def event(action: str, **event_labels: str) -> ContainerEvent:
    return ContainerEvent(action, "c-1", event_labels, "1795482882.635229882")


def run_container(engine: FakeRuntime, name: str, resource: str, node: str = THIS_NODE) -> None:
    engine.add_image("img")
    engine.run(ContainerSpec(name=name, image="img", labels={
        labels.ROLE: ROLE, labels.RESOURCE: resource, labels.NODE: node,
    }))


def test_an_event_names_the_nudge_of_its_role_and_its_resource(nudged):
    died = event("die", **{labels.ROLE: ROLE, labels.RESOURCE: "arn:1"})

    nudge, resource = container_events.nudge_for(died)
    nudge(resource)

    assert nudged == ["arn:1"]


@pytest.mark.parametrize("unwanted", [
    event("die", **{labels.ROLE: "other-role", labels.RESOURCE: "arn:1"}),  # no feature for the role
    event("start", **{labels.ROLE: ROLE, labels.RESOURCE: "arn:1"}),  # an action nobody asked for
    event("die", **{labels.ROLE: ROLE}),  # a container without resource
])
def test_an_event_no_feature_asked_for_nudges_nothing(nudged, unwanted):
    assert container_events.nudge_for(unwanted) is None


def test_only_this_stack_and_nodes_containers_nudge_and_each_event_once(nudged):
    engine = FakeRuntime()
    watcher = container_events.Watcher(engine, THIS_NODE)
    run_container(engine, "mine", "arn:mine")
    run_container(engine, "another-nodes", "arn:theirs", node="node-there")
    engine.exit("mine", 0)
    engine.exit("another-nodes", 0)

    assert watcher.follow_once()  # the stream ends after what was told: reconnected next
    assert watcher.follow_once()  # resumed after the last event seen: nothing told twice

    assert nudged == ["arn:mine"]


def test_an_engine_away_is_retried_with_growing_pauses_and_a_reachable_one_at_the_first_pause(nudged):
    engine = FakeRuntime()
    engine.unreachable = True
    pauses: list[float] = []

    class CountedStop(threading.Event):
        def wait(self, timeout=None):
            pauses.append(timeout)
            if len(pauses) == 4:
                engine.unreachable = False  # the engine is back for the fifth attempt
            return len(pauses) == 6

    container_events.Watcher(engine, THIS_NODE, stop=CountedStop()).run()

    first = container_events.FIRST_RETRY_SECONDS
    assert pauses == [first, 2 * first, 4 * first, 8 * first, first, first]


def test_a_nudge_that_fails_neither_ends_the_watcher_nor_loses_the_next_event(monkeypatch):
    monkeypatch.setattr(container_events, "_interests", {})
    nudged = []

    def nudge(resource: str) -> None:
        if resource == "arn:broken":
            raise ConnectionError("the broker is away")
        nudged.append(resource)

    container_events.register(ROLE, nudge)
    engine = FakeRuntime()
    run_container(engine, "first", "arn:broken")
    run_container(engine, "second", "arn:fine")
    engine.exit("first", 1)
    engine.exit("second", 0)

    assert container_events.Watcher(engine, THIS_NODE).follow_once()

    assert nudged == ["arn:fine"]


@pytest.mark.django_db(transaction=True)
def test_a_training_container_that_exits_has_its_job_looked_at_at_once(monkeypatch, settings):
    """Without the event the job's next look is a poll away: a message now is dropped as early."""
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 60.0
    FakeStore().install(monkeypatch)
    make_node(name=settings.SAGEPORT_NODE_NAME, gpus=0, cpus=4, memory_gib=16)
    engine = FakeRuntime(images=(IMAGE,))
    monkeypatch.setattr(training, "get_runtime", lambda: engine)
    sent = []
    monkeypatch.setattr(tasks, "_enqueue", lambda *message: sent.append(message))
    monkeypatch.setattr(container_events, "_interests", {})
    container_events.register(labels.TRAINING_ROLE, tasks.nudge_for_container)
    job = new_job()
    name = until_training(job, engine, poll=60.0)
    engine.exit(name, 0)
    assert training.reconcile(job.pk) is None  # the poll's message would be early: dropped
    assert t.state_of(TrainingJob.objects.get(pk=job.pk)) == t.TRAINING

    assert container_events.Watcher(engine, settings.SAGEPORT_NODE_NAME).follow_once()

    assert sent == [(job.pk, 0, settings.SAGEPORT_NODE_NAME)]
    assert training.reconcile(job.pk) == 0  # the message sent runs the step: Uploading
    assert training.reconcile(job.pk) is None
    assert TrainingJob.objects.get(pk=job.pk).training_job_status == "Completed"
