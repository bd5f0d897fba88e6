"""A HyperPodPyTorchJob whose node is lost (capacity/nodes.declare_lost: no heartbeat) through the
operator, the fake runtime and the fake agents: the job is moved to another live node, resuming
from the checkpoint its agents agreed on, or waits for one; its worker's routing, the sweep that
looks at it at once, and the clean-up on the lost node when it registers again.

HyperPod counts a node failure as a fault of the pods it held: the job restarts as its runPolicy
allows (`jobMaxRetryCount`: "Maximum number of restarts at the process level", which the
training operator guide's example reads as the total), and a pod whose node is gone cannot be
restarted in place, so the restart is a full job restart (status.latestFaultyPodInstanceList
restartType `JLR`, faultyInstanceIdList the node: the CRD's "PLR or JLR" and its faulty instance
list). HyperPod's auto-resume replaces a faulty node and the job resumes from its last checkpoint
(the HyperPod developer guide, "Automatic node recovery and auto-resume")."""
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity.gpus import free_gpus
from capacity.models import Node
from elastic import reaper, tasks
from elastic.models import ElasticReplica, HyperPodJob, JobPhase
from runtime.fake import FakeRuntime
from tests.unit.elastic import test_operator as operator_tests
from tests.unit.elastic.fakes import manifest, submit
from tests.unit.elastic.test_operator import last_starts, ports, settle
from tests.unit.training.test_scheduler import make_node

pytestmark = pytest.mark.django_db(transaction=True)
# The operator tests' fixtures (a 4-GPU node, the fake runtime and agents, priority weights).
engine, agents, node, weights = (operator_tests.engine, operator_tests.agents, operator_tests.node,
                                 operator_tests.weights)
PROGRESS = {"s3://b/ckpt": {"progressData": "s3://b/ckpt/step_30", "progressCount": 30}}


def job_of(replicas=2, retries=3) -> HyperPodJob:
    return submit(manifest(groups=[{"name": "pods", "replicas": replicas}],
                           run_policy={"jobMaxRetryCount": retries}))


def lose(node: Node) -> None:
    Node.objects.filter(pk=node.pk).update(lost_at=timezone.now())


def back(node: Node) -> None:
    Node.objects.filter(pk=node.pk).update(lost_at=None, heartbeat_at=timezone.now())


def condition(job: HyperPodJob, kind: str) -> dict:
    return next(c for c in job.status["conditions"] if c["type"] == kind)


def test_a_lost_nodes_job_restarts_on_another_node_from_its_agreed_checkpoint(engine, agents, node):
    other = make_node(name="zz-other-node", gpus=4)
    job = job_of()
    (job,) = settle(job)
    assert (job.phase, job.node) == (JobPhase.RUNNING, node)
    for port in ports(engine, job):
        agents.progress[port] = PROGRESS
    (job,) = settle(job)
    assert job.progress == PROGRESS
    pods = [f"{job.name}-pods-0", f"{job.name}-pods-1"]

    lose(node)
    (job,) = settle(job)

    assert (job.phase, job.node, job.world_size) == (JobPhase.RUNNING, other, 2)
    assert (job.fault_count, job.restart_count) == (1, 1)
    assert job.status["latestFaultyPodInstanceList"] == {
        "restartType": "JLR", "faultyPodList": pods, "faultyRankList": ["0", "1"],
        "faultyInstanceIdList": [node.name]}
    restarting = condition(job, "Restarting")
    assert restarting["reason"] == "Fault" and node.name in restarting["message"]
    starts = last_starts(agents, engine, job)
    assert [body["faultCount"] for body in starts] == [1, 1]
    assert all(body["progress"] == PROGRESS for body in starts)  # resumed from the agreed step
    assert {r.node for r in ElasticReplica.objects.filter(job=job)} == {other}
    assert len(free_gpus(Node.objects.get(pk=node.pk))) == 4  # the lost node's GPUs held no more


def test_with_no_other_node_the_job_waits_saying_so_and_returns_with_the_node(engine, agents, node):
    job = job_of()
    (job,) = settle(job)
    lose(node)
    (job,) = settle(job)
    assert (job.phase, job.node) == (JobPhase.PENDING, None)
    assert ElasticReplica.objects.filter(job=job).count() == 0
    waiting = job.status["conditions"][-1]
    assert (waiting["type"], waiting["status"], waiting["reason"]) == ("Restarting", "True", "Fault")
    assert waiting["message"] == "Waiting for a worker node."
    assert job.status["latestFaultyPodInstanceList"]["faultyInstanceIdList"] == [node.name]

    back(node)  # the node registers again (or a replacement): the job runs there
    (job,) = settle(job)
    assert (job.phase, job.node, job.world_size, job.fault_count) == (JobPhase.RUNNING, node, 2, 1)


def test_a_lost_node_with_no_retries_left_fails_the_job_naming_the_node(engine, agents, node):
    make_node(name="zz-other-node", gpus=4)
    job = job_of(retries=0)
    (job,) = settle(job)
    lose(node)
    (job,) = settle(job)
    failed = job.status["conditions"][-1]
    assert (job.phase, failed["reason"]) == (JobPhase.FAILED, "JobMaxRetryCountReached")
    assert f"Node {node.name} was lost" in failed["message"]
    assert ElasticReplica.objects.filter(job=job).count() == 0


def test_a_pending_or_finished_job_is_not_restarted_by_a_lost_node(engine, agents, node):
    job = job_of()
    lose(node)
    (job,) = settle(job)
    assert (job.phase, job.fault_count) == (JobPhase.PENDING, 0)  # never placed on the lost node


def test_the_steps_of_a_lost_nodes_job_run_on_any_worker_and_the_sweep_sends_them_at_once(
    engine, agents, node, monkeypatch
):
    job = job_of()
    (job,) = settle(job)
    assert tasks._home_of(job.pk) == node.name  # its node's queue, while the node lives
    sent = []
    monkeypatch.setattr(tasks.reconcile_hyperpod_job, "delay", sent.append)
    monkeypatch.setattr(reaper, "get_runtime", lambda: engine)
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=timezone.now() + timedelta(seconds=60))
    Node.objects.filter(pk=node.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))

    tasks.sweep_hyperpod_jobs()

    assert Node.objects.get(pk=node.pk).lost_at is not None
    assert sent == [job.pk]  # looked at now, not when its next look was due
    assert tasks._home_of(job.pk) is None  # any worker: nobody consumes the lost node's queue


def test_a_node_back_after_being_lost_removes_the_replicas_of_the_jobs_moved_off_it(
    engine, agents, node, monkeypatch
):
    other = make_node(name="zz-other-node", gpus=4)
    job = job_of()
    (job,) = settle(job)
    # The lost node's engine keeps what it ran: the old pods, under the same names.
    returning = FakeRuntime(images=("elastic:latest",))
    for state in engine.find({"sageport.role": "elastic"}):
        returning.run(replace(engine.containers[state.name].spec, extra_networks=()))
    lose(node)
    (job,) = settle(job)
    assert job.node == other
    monkeypatch.setattr(reaper, "get_runtime", lambda: returning)

    reaper.reap_elastic_orphans()  # run by the node's registration (ElasticConfig.ready)

    assert returning.find({"sageport.role": "elastic"}) == []
    monkeypatch.setattr(reaper, "get_runtime", lambda: engine)
    reaper.reap_elastic_orphans()  # the job's pods on its new node are its own
    assert len(engine.find({"sageport.role": "elastic"})) == 2
