"""The operator reacts as things happen, not at its poll interval (here a minute): GPUs freed by any
job have the jobs that may take them looked at at once, a preemption's victim is told at once, and
while the agents are expected to change their answer (a stop, a start) the next look comes after
a share of the time the transition has lasted. Looks are driven one at a time through the fake
runtime and agents (test_operator's fixtures); the messages asked for are recorded (conftest)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import nodes
from elastic import operator, tasks
from elastic.models import HyperPodJob, JobPhase
from tests.unit.elastic import test_operator as operator_tests
from tests.unit.elastic.fakes import manifest, submit
from tests.unit.elastic.test_operator import (
    complete,
    elastic_job,
    fixed_job,
    last_starts,
    look,
    ports,
    settle,
)

pytestmark = pytest.mark.django_db(transaction=True)
# The operator tests' fixtures (a 4-GPU node, the fake runtime and agents, priority weights).
engine, agents, node, weights = (operator_tests.engine, operator_tests.agents, operator_tests.node,
                                 operator_tests.weights)

POLL = 60.0


@pytest.fixture(autouse=True)
def slow_poll(node, settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = POLL


def step(job: HyperPodJob) -> float | None:
    """One look, as its message runs it; the delay the operator asks for before the next one."""
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=None)
    return operator.reconcile(job.pk)


def next_look_in_a_minute(job: HyperPodJob) -> None:
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=timezone.now() + timedelta(seconds=POLL))


def test_gpus_another_job_frees_have_a_job_that_may_grow_looked_at_at_once(engine, agents, node, sent_looks):
    blocker = fixed_job(3)
    (blocker,) = settle(blocker)
    job = elastic_job()
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)
    next_look_in_a_minute(job)
    sent_looks.clear()

    complete(agents, engine, blocker)
    assert look(blocker).phase == JobPhase.SUCCEEDED  # its three GPUs are free

    assert (job.pk, 0, node.name) in sent_looks
    assert HyperPodJob.objects.get(pk=job.pk).next_check_at <= timezone.now()  # not dropped as early
    assert look(job).phase == JobPhase.STOPPING  # that look starts the growth


def test_a_job_waiting_for_gpus_is_looked_at_when_they_are_freed(engine, agents, node, sent_looks):
    blocker = fixed_job(4)
    (blocker,) = settle(blocker)
    waiting = fixed_job(2)
    (waiting,) = settle(waiting, looks=2)
    assert waiting.phase == JobPhase.PENDING
    sent_looks.clear()

    complete(agents, engine, blocker)
    look(blocker)
    assert (waiting.pk, 0, None) in sent_looks  # a pending job has no node yet: any worker


def test_a_preempted_job_is_told_at_once(engine, agents, node, sent_looks):
    job = elastic_job()
    (job,) = settle(job)
    assert job.world_size == 4
    next_look_in_a_minute(job)
    sent_looks.clear()

    urgent = fixed_job(2, priority_class="high")
    look(urgent)

    assert HyperPodJob.objects.get(pk=job.pk).target_replicas == 2
    assert (job.pk, 0, None) in sent_looks  # handed on to its node by the worker that takes it


def test_a_stop_is_watched_closely_then_less_as_it_lasts(engine, agents):
    blocker = fixed_job(3)
    (blocker,) = settle(blocker)
    job = elastic_job()
    (job,) = settle(job)
    agents.unresponsive_to_stop.update(ports(engine, job))  # its agent stays `stopping`
    complete(agents, engine, blocker)
    look(blocker)

    assert step(job) == operator.TRANSITION_MIN_POLL_SECONDS  # the stop was just sent
    assert HyperPodJob.objects.get(pk=job.pk).phase == JobPhase.STOPPING
    shortest = operator.TRANSITION_MIN_POLL_SECONDS
    for lasted, expected in ((0.4, shortest), (8, 2.0), (100, 25.0), (1000, POLL)):
        since = timezone.now() - timedelta(seconds=lasted)
        HyperPodJob.objects.filter(pk=job.pk).update(phase_since=since)
        assert step(job) == pytest.approx(expected, abs=0.05)

    agents.set_all("ready", ports(engine, job))  # the graceful stop is over
    assert step(job) == 0.0  # the world is re-formed at once


def test_a_start_is_watched_closely_until_every_agent_is_ready(engine, agents):
    agents.first_status = "initializing"  # the new replicas' agents take a moment to come up
    job = submit(manifest(groups=[{"name": "pods", "replicas": 2}]))
    assert step(job) == 0.0  # placed: its replicas are created at once
    assert step(job) == operator.TRANSITION_MIN_POLL_SECONDS  # created, the agents not ready yet
    since = timezone.now() - timedelta(seconds=8)
    HyperPodJob.objects.filter(pk=job.pk).update(phase_since=since)
    assert step(job) == pytest.approx(2.0, abs=0.05)

    agents.set_all("ready", ports(engine, job))
    assert step(job) == POLL  # started: running, nothing expected to change
    assert HyperPodJob.objects.get(pk=job.pk).phase == JobPhase.RUNNING


def test_growing_starts_the_new_replicas_while_the_world_stops(engine, agents):
    blocker = fixed_job(3)
    (blocker,) = settle(blocker)
    job = elastic_job()
    (job,) = settle(job)
    (first,) = ports(engine, job)
    agents.unresponsive_to_stop.add(first)  # the running replica takes its time to stop
    complete(agents, engine, blocker)
    look(blocker)

    job = look(job)
    assert job.phase == JobPhase.STOPPING
    assert len(ports(engine, job)) == 4  # the three new pods already run beside the stopping one
    assert [agents.stops.get(port) for port in ports(engine, job)] == [
        [{"is_graceful": True, "timeout": 120}], None, None, None]  # only the old world is stopped
    assert agents.state[first] == "stopping"
    assert all(agents.started.get(port) is None for port in ports(engine, job)[1:])

    agents.set_all("ready", [first])
    job = settle(job, looks=3)[0]
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 4)
    assert [body["rank"] for body in last_starts(agents, engine, job)] == [0, 1, 2, 3]


def test_a_node_that_registers_has_the_jobs_waiting_for_gpus_looked_at(engine, agents, node, sent_looks):
    settle(fixed_job(4))
    waiting = fixed_job(2)  # the node's four GPUs are taken: it waits, for another node maybe
    (waiting,) = settle(waiting, looks=2)
    assert waiting.phase == JobPhase.PENDING
    sent_looks.clear()

    assert tasks.nudge_for_registered_node in nodes._registered_hooks
    tasks.nudge_for_registered_node()

    assert (waiting.pk, 0, None) in sent_looks


def test_growth_held_back_by_the_scaling_timeout_is_looked_at_when_it_ends(engine, agents):
    blocker = fixed_job(3)
    settle(blocker)
    job = elastic_job(scalingTimeoutInSeconds=30)
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)
    HyperPodJob.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(seconds=25))

    assert step(job) == pytest.approx(5.0, abs=0.1)  # not the minute's poll
    HyperPodJob.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(seconds=31))
    assert step(job) == POLL  # no pause left, and no room: the poll
