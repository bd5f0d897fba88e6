"""HyperPodPyTorchJobs whose world no single node holds: placed over several nodes (each with an
engine of its own: one fake runtime per node), joined by an overlay network, each node doing its
own replicas' share (elastic/members.py); a lost node's replicas replaced on live nodes, or the
job continuing smaller and growing back when a node returns.

What HyperPod does that this mirrors: a job's pods are scheduled over the cluster's nodes (the
training operator places each pod where its resources fit), reach each other by pod name
(`master_addr` is rank 0's pod), and a node failure is a fault of its pods: with auto-resume
the job restarts on healthy nodes, replacing the faulty node's pods (HyperPod developer guide,
"Automatic node recovery and auto-resume"); an elastic job without capacity for its faulty pods
continues at the largest allowed size after `faultyScaleDownTimeoutInSeconds` and scales up when
capacity returns (the elasticPolicy fields of the HyperPodPyTorchJob CRD)."""
import itertools
import tempfile
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import nodes
from capacity.models import Node
from elastic import members, operator, planner, priorities, reaper, replicas
from elastic.models import ElasticReplica, HyperPodJob, JobPhase
from elastic.spec import parse
from runtime import host_locks
from runtime.fake import FakeRuntime
from tests.unit.elastic.fakes import FakeAgents, manifest, submit
from tests.unit.training.test_scheduler import make_node

pytestmark = pytest.mark.django_db(transaction=True)

NAMES = ("node-a", "node-b", "node-c")
ELASTIC_1_TO_2 = {"minReplicas": 1, "maxReplicas": 2, "scalingTimeoutInSeconds": 0,
                  "gracefulShutdownTimeoutInSeconds": 30, "faultyScaleDownTimeoutInSeconds": 0}


class Cluster:
    """One fake engine per node; `here` is the node whose worker runs the current step."""

    def __init__(self, names):
        self.engines = {}
        for number, name in enumerate(names):
            engine = FakeRuntime(images=("elastic:latest",))
            engine.swarm = True
            engine._ports = itertools.count(40000 + 1000 * number)  # agents are told apart by port
            self.engines[name] = engine
        self.here = names[0]

    def runtime(self):
        return self.engines[self.here]

    def running(self, job: HyperPodJob) -> dict[str, set[str]]:
        """Each node's running containers of the job."""
        labels = replicas.job_labels(job)
        return {name: {state.name for state in engine.find(labels) if state.running}
                for name, engine in self.engines.items()}


@pytest.fixture(autouse=True)
def spanning(settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    settings.SAGEPORT_SPAN_NODES = True


@pytest.fixture
def cluster(monkeypatch) -> Cluster:
    fake = Cluster(NAMES)
    for name in NAMES:
        make_node(name=name, gpus=1)
    monkeypatch.setattr(operator, "get_runtime", fake.runtime)
    monkeypatch.setattr(members, "get_runtime", fake.runtime)
    monkeypatch.setattr(nodes, "local_name", lambda: fake.here)
    monkeypatch.setattr(priorities, "priority_weight", lambda account, region, name: None)
    return fake


@pytest.fixture
def agents(monkeypatch) -> FakeAgents:
    fake = FakeAgents()
    monkeypatch.setattr(operator, "Agent", fake.agent)
    return fake


def look(cluster: Cluster, job: HyperPodJob) -> HyperPodJob:
    """One step on the owner's worker (any live worker once it is lost), then each other live
    node's share, as elastic/tasks.py sends them."""
    job = HyperPodJob.objects.select_related("node").get(pk=job.pk)
    live = [n.name for n in Node.objects.filter(lost_at__isnull=True).order_by("name")]
    cluster.here = job.node.name if job.node and job.node.name in live else live[0]
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=None)
    before = _holding(job)
    operator.reconcile(job.pk)
    owner = cluster.here
    for name in sorted((before | _holding(job)) - {owner}):
        cluster.here = name
        members.sync(job.pk)
    return HyperPodJob.objects.select_related("node").filter(pk=job.pk).first()


def _holding(job: HyperPodJob) -> set[str]:
    held = ElasticReplica.objects.filter(job_id=job.pk, node__lost_at__isnull=True)
    return set(held.values_list("node__name", flat=True))


def settle(cluster: Cluster, job: HyperPodJob, looks: int = 12) -> HyperPodJob:
    for _ in range(looks):
        job = look(cluster, job)
    return job


def placed(job: HyperPodJob) -> dict[str, str]:
    """pod → its node."""
    rows = ElasticReplica.objects.filter(job=job).select_related("node")
    return {replicas.pod_name(job, r.group, r.index): r.node.name for r in rows}


def starts(cluster: Cluster, agents: FakeAgents, job: HyperPodJob) -> list[dict]:
    """The last /start of every running pod's agent, in rank order."""
    labels = replicas.job_labels(job)
    live = Node.objects.filter(lost_at__isnull=True).values_list("name", flat=True)
    ports = [s.host_port for name in live for s in cluster.engines[name].find(labels) if s.running]
    return sorted((agents.started[port][-1] for port in ports), key=lambda body: body["rank"])


def two_replicas(elastic=None) -> HyperPodJob:
    group = {"name": "pods", "replicas": 2, "max_replicas": 2}
    return submit(manifest(groups=[group], elastic=elastic, run_policy={"jobMaxRetryCount": 3}))


# --- The planner's decisions on declared inventories -------------------------------------------

def test_a_world_one_node_holds_goes_on_that_node_alone():
    a, b = Node(name="a"), Node(name="b")
    assert planner.placement([1, 1], [(a, 1), (b, 4)], span=True) == [b, b]  # the first that holds it


def test_a_world_no_node_holds_is_spread_first_fit_in_rank_order_when_spanning_is_on():
    a, b, c = Node(name="a"), Node(name="b"), Node(name="c")
    assert planner.placement([2, 1, 1], [(a, 2), (b, 1), (c, 1)], span=True) == [a, b, c]
    assert planner.placement([1, 1], [(a, 1), (b, 1)], span=False) is None  # one node only


def test_a_replica_larger_than_every_node_never_fits_even_spread():
    a, b = Node(name="a"), Node(name="b")
    assert planner.placement([2], [(a, 1), (b, 1)], span=True) is None


def test_a_world_larger_than_any_node_starts_over_several(cluster):
    job = two_replicas()
    plan = planner.plan_start(job, parse(job.manifest))
    assert isinstance(plan, planner.Start) and plan.size == 2


def test_without_spanning_a_world_larger_than_any_node_never_fits(cluster, settings):
    settings.SAGEPORT_SPAN_NODES = False
    job = two_replicas()
    plan = planner.plan_start(job, parse(job.manifest))
    assert isinstance(plan, planner.NeverFits) and "no node has that many" in plan.reason


def test_a_world_larger_than_every_node_together_never_fits(cluster):
    job = submit(manifest(groups=[{"name": "pods", "replicas": 4, "max_replicas": 4}]))
    plan = planner.plan_start(job, parse(job.manifest))
    assert isinstance(plan, planner.NeverFits) and "spread over every node" in plan.reason


# --- Through the operator and the nodes' shares ---------------------------------------------------

def test_a_job_spanning_nodes_runs_each_replica_on_its_node_joined_by_an_overlay(cluster, agents):
    job = settle(cluster, two_replicas())

    assert (job.phase, job.world_size, job.overlay) == (JobPhase.RUNNING, 2, True)
    where = placed(job)
    assert where == {f"{job.name}-pods-0": "node-a", f"{job.name}-pods-1": "node-b"}
    assert job.node.name == "node-a"  # the owner: rank 0's node
    running = cluster.running(job)
    assert (len(running["node-a"]), len(running["node-b"]), running["node-c"]) == (1, 1, set())
    network = replicas.overlay_name(job)
    assert cluster.engines["node-a"].networks[network]["overlay"]  # joined by node-b by name
    # Each pod's first network is its node's bridge of the job, which publishes the agent's port.
    assert not cluster.engines["node-b"].networks[replicas.network_name(job)]["overlay"]
    assert [(body["rank"], body["nnodes"], body["master_addr"]) for body in starts(cluster, agents, job)] == [
        (0, 2, f"{job.name}-pods-0"), (1, 2, f"{job.name}-pods-0")]
    # Each pod is at its fixed address, which every pod's /etc/hosts (written by its own node) names.
    fixed = replicas.pod_addresses(job, parse(job.manifest), job.network_subnet)
    for replica in ElasticReplica.objects.filter(job=job).select_related("node"):
        (state,) = cluster.engines[replica.node.name].find(replicas.job_labels(job))
        assert state.addresses[network] == fixed[replicas.pod_name(job, replica.group, replica.index)]
        lines = replicas.hosts_file(job, replica).read_text().splitlines()
        assert dict(reversed(line.split("\t")) for line in lines if "localhost" not in line) == fixed


def test_the_owners_node_lost_the_world_restarts_on_the_survivor_and_a_replacement(cluster, agents):
    job = settle(cluster, two_replicas())
    Node.objects.filter(name="node-a").update(lost_at=timezone.now())

    job = settle(cluster, job)

    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 2, 1)
    assert job.node.name == "node-b"  # the survivor owns the job now
    assert set(placed(job).values()) == {"node-b", "node-c"}
    assert job.status["latestFaultyPodInstanceList"] == {
        "restartType": "JLR", "faultyPodList": [f"{job.name}-pods-0"], "faultyRankList": ["0"],
        "faultyInstanceIdList": ["node-a"]}
    running = cluster.running(job)
    assert (len(running["node-b"]), len(running["node-c"])) == (1, 1)
    # node-b's pod was created again (a full job restart), under its next name.
    assert all(name.endswith("-g1") for name in running["node-b"])
    assert [(body["rank"], body["faultCount"]) for body in starts(cluster, agents, job)] == [(0, 1), (1, 1)]


def test_a_share_reaching_the_owners_node_leaves_its_replicas_to_the_owners_steps(cluster, agents):
    # Sent by a step another live worker ran before the job's owner moved to this node: the
    # owner's steps start (and remove) its replicas; the share starting one too raced them.
    job = settle(cluster, two_replicas())
    owner = cluster.engines["node-a"]
    (pod,) = owner.find(replicas.job_labels(job))
    owner.remove(pod.name)
    HyperPodJob.objects.filter(pk=job.pk).update(phase=JobPhase.CREATING)

    cluster.here = "node-a"
    members.sync(job.pk)

    assert owner.find(replicas.job_labels(job)) == []
    cluster.here = "node-b"
    members.sync(job.pk)  # another node's share still starts what it holds
    assert len(cluster.engines["node-b"].find(replicas.job_labels(job))) == 1


def test_one_share_of_a_job_at_a_time_on_a_node(cluster, agents, settings, monkeypatch, tmp_path):
    # Two worker children running the node's share of one job at once would both start the same
    # missing pod: a share waits for the one under way, and leaves if it lasts (the next comes).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(members, "SHARE_WAIT_SECONDS", 0.1)
    job = settle(cluster, two_replicas())
    member = cluster.engines["node-b"]
    (pod,) = member.find(replicas.job_labels(job))
    member.remove(pod.name)
    HyperPodJob.objects.filter(pk=job.pk).update(phase=JobPhase.CREATING)
    cluster.here = "node-b"

    with host_locks.held("elastic-members", f"{settings.SAGEPORT_STACK_ID}-{job.pk}-node-b"):
        members.sync(job.pk)  # another share holds the job here
        assert member.find(replicas.job_labels(job)) == []

    members.sync(job.pk)
    assert len(member.find(replicas.job_labels(job))) == 1


def test_without_room_for_the_lost_replica_an_elastic_job_continues_smaller_then_grows_back(
    cluster, agents, settings
):
    # The lost node comes back with its old pod still running under the name its slot gets again.
    settings.SAGEPORT_NODE_LOST_AFTER_SECONDS = settings.SAGEPORT_NODE_HEARTBEAT_SECONDS
    Node.objects.filter(name="node-c").delete()
    job = settle(cluster, two_replicas(elastic=ELASTIC_1_TO_2))
    assert job.world_size == 2
    Node.objects.filter(name="node-b").update(lost_at=timezone.now())

    job = settle(cluster, job)
    assert (job.phase, job.world_size, job.node.name) == (JobPhase.RUNNING, 1, "node-a")

    Node.objects.filter(name="node-b").update(lost_at=None, heartbeat_at=timezone.now())
    job = settle(cluster, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    assert set(placed(job).values()) == {"node-a", "node-b"}
    (pod,) = cluster.engines["node-b"].find(replicas.job_labels(job))  # the old one removed
    assert starts(cluster, agents, job)[1]["rank"] == 1 and pod.running


def test_growing_onto_another_node_starts_its_new_replica_there_while_the_world_stops(cluster, agents):
    Node.objects.filter(name="node-c").update(lost_at=timezone.now())  # away while the job starts
    elastic = {**ELASTIC_1_TO_2, "minReplicas": 2, "maxReplicas": 3}
    job = settle(cluster, submit(manifest(groups=[{"name": "pods", "replicas": 2, "max_replicas": 3}],
                                          elastic=elastic)))
    assert (job.phase, job.world_size, job.overlay) == (JobPhase.RUNNING, 2, True)
    labels = replicas.job_labels(job)
    old = {state.host_port for engine in cluster.engines.values() for state in engine.find(labels)}
    agents.unresponsive_to_stop.update(old)  # the world takes its time to stop

    Node.objects.filter(name="node-c").update(lost_at=None, heartbeat_at=timezone.now())
    job = look(cluster, job)

    assert job.phase == JobPhase.STOPPING
    new = ElasticReplica.objects.get(job=job, index=2)
    assert new.node.name == "node-c" and cluster.running(job)["node-c"] == {new.container_name}
    agents.set_all("ready", old)
    job = settle(cluster, job, looks=4)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 3)
    assert [body["rank"] for body in starts(cluster, agents, job)] == [0, 1, 2]


ELASTIC_2_TO_3 = {"minReplicas": 2, "maxReplicas": 3, "scalingTimeoutInSeconds": 60,
                  "gracefulShutdownTimeoutInSeconds": 30, "faultyScaleDownTimeoutInSeconds": 600}


@pytest.mark.parametrize("lost", ["node-a", "node-c"])  # the owner (rank 0's node); another node
def test_a_node_lost_with_none_spare_the_world_goes_on_smaller_on_the_others_and_grows_back_later(
    cluster, agents, settings, lost
):
    # The lost node comes back with its old pod still running under the name its slot gets again
    # (disowned: started before the node fell silent, which here is a moment ago).
    settings.SAGEPORT_NODE_LOST_AFTER_SECONDS = settings.SAGEPORT_NODE_HEARTBEAT_SECONDS
    group = {"name": "pods", "replicas": 3, "max_replicas": 3}
    job = settle(cluster, submit(manifest(groups=[group], elastic=ELASTIC_2_TO_3,
                                          run_policy={"jobMaxRetryCount": 3})))
    assert (job.world_size, sorted(placed(job).values())) == (3, list(NAMES))
    Node.objects.filter(name=lost).update(lost_at=timezone.now())

    # No spare node: the job waits faultyScaleDownTimeoutInSeconds, saying for what, then goes on
    # at 2 on the two others, never waiting for a node it cannot get.
    job = settle(cluster, job, looks=3)
    pod = {"node-a": f"{job.name}-pods-0", "node-c": f"{job.name}-pods-2"}[lost]
    assert (job.phase, job.world_size) == (JobPhase.STOPPING, 3)
    restarting = job.status["conditions"][-1]
    assert (restarting["type"], restarting["reason"]) == ("Restarting", "Fault")
    assert restarting["message"] == f"Waiting for capacity to replace {pod}, faulty on {lost} (3 wanted)."
    HyperPodJob.objects.filter(pk=job.pk).update(short_since=job.short_since - timedelta(seconds=601))
    job = settle(cluster, job)
    survivors = sorted(set(NAMES) - {lost})
    assert (job.phase, job.world_size, job.target_replicas) == (JobPhase.RUNNING, 2, 2)
    assert sorted(placed(job)) == [f"{job.name}-pods-0", f"{job.name}-pods-1"]
    assert sorted(placed(job).values()) == survivors and job.node.name in survivors
    conditions = {c["type"]: c for c in job.status["conditions"]}
    assert conditions["Running"]["reason"] == "Resized"
    assert job.status["elasticScalingStatus"]["targetReplicas"] == {"pods": 2}
    assert job.status["latestFaultyPodInstanceList"]["faultyInstanceIdList"] == [lost]
    assert [(body["rank"], body["nnodes"]) for body in starts(cluster, agents, job)] == [(0, 2), (1, 2)]

    # Back within scalingTimeoutInSeconds of that resize: the job stays at 2 until it has passed.
    Node.objects.filter(name=lost).update(lost_at=None, heartbeat_at=timezone.now())
    job = settle(cluster, job, looks=3)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    HyperPodJob.objects.filter(pk=job.pk).update(last_scaling_at=job.last_scaling_at - timedelta(seconds=61))
    job = settle(cluster, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 3)
    assert sorted(placed(job).values()) == list(NAMES)  # one replica per node again
    assert job.status["conditions"][-1]["reason"] == "Resized"
    assert [(body["rank"], body["nnodes"]) for body in starts(cluster, agents, job)] == [(0, 3), (1, 3),
                                                                                       (2, 3)]


def test_every_node_of_the_job_lost_moves_the_whole_job(cluster, agents):
    job = settle(cluster, two_replicas())
    Node.objects.filter(name__in=["node-a", "node-b"]).update(lost_at=timezone.now())
    job = settle(cluster, job)
    assert (job.phase, job.node) == (JobPhase.PENDING, None)  # one node left: 1 GPU for 2 replicas
    assert job.status["conditions"][-1]["message"].startswith("Waiting for 2 GPUs")


def test_a_deleted_spanning_jobs_containers_go_from_every_node(cluster, agents, monkeypatch):
    monkeypatch.setattr(reaper, "get_runtime", cluster.runtime)  # each node's, on its own engine
    job = settle(cluster, two_replicas())
    HyperPodJob.objects.filter(pk=job.pk).update(deletion_requested_at=timezone.now())
    look(cluster, job)  # the owner deletes the job; node-b's share finds it gone
    assert not any(cluster.engines[name].find(replicas.job_labels(job)) for name in NAMES)
