"""A job spanning two nodes, driven one step at a time: the job's node (algo-1's, this test's
node) takes the steps, the member node does its share in `member.sync`, with a data directory of
its own; both nodes' "engines" are one fake runtime, as two nodes on one machine share one
engine. What users see must be what a job on one node gives them."""
import json
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from capacity.models import Node, Placement
from logs import store as log_store
from runtime import labels
from runtime.fake import FakeRuntime
from tests.unit.fake_storage import FakeStore
from tests.unit.training.test_reconciler_steps import artifact_uri, new_job, step
from tests.unit.training.test_scheduler import make_node
from training import containers, member, tasks, workspace
from training import reconciler as training
from training import transitions as t

pytestmark = pytest.mark.django_db(transaction=True)

MEMBER = "test-node-m"  # sorts after the job's node: algo-1 goes there
IMAGE = "algo:latest"


@pytest.fixture(autouse=True)
def spanning(settings):
    settings.SAGEPORT_SPAN_NODES = True
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    settings.SAGEPORT_STOP_GRACE_SECONDS = 30
    settings.SAGEPORT_PULL_MISSING_IMAGES = False
    # One GPU each: a job of two one-GPU instances fits on neither alone.
    make_node(name=settings.SAGEPORT_NODE_NAME, gpus=1, cpus=4, memory_gib=16)
    make_node(name=MEMBER, gpus=1, cpus=4, memory_gib=16)


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=(IMAGE,))
    fake.swarm = True
    monkeypatch.setattr(training, "get_runtime", lambda: fake)
    monkeypatch.setattr(member, "get_runtime", lambda: fake)
    return fake


@pytest.fixture
def store(monkeypatch) -> FakeStore:
    return FakeStore().install(monkeypatch)


@pytest.fixture
def on_member(settings, tmp_path):
    """Run code as the member node's worker: its node name, its own data directory."""
    @contextmanager
    def acting():
        own = settings.SAGEPORT_NODE_NAME, settings.DATA_DIR
        settings.SAGEPORT_NODE_NAME, settings.DATA_DIR = MEMBER, tmp_path / "member-data"
        try:
            yield
        finally:
            settings.SAGEPORT_NODE_NAME, settings.DATA_DIR = own
    return acting


def spanning_job(**request):
    job = new_job(**request)
    job.request["ResourceConfig"] = {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 1}
    job.save(update_fields=["request"])
    return job


def sync(job, on_member):
    with on_member():
        member.sync(job.pk)
        job.refresh_from_db()


def until_both_run(job, engine, on_member) -> dict[str, str]:
    step(job)
    assert t.state_of(job) == t.DOWNLOADING
    assert dict(Placement.objects.filter(job=job).values_list("host", "node__name")) == {
        "algo-1": job_node(), "algo-2": MEMBER,
    }
    step(job)
    assert t.state_of(job) == t.DOWNLOADING  # the member has not staged its instance yet
    sync(job, on_member)
    step(job)
    assert t.state_of(job) == t.TRAINING
    step(job)
    names = {host: containers.container_name(job, host) for host in ("algo-1", "algo-2")}
    assert names["algo-2"] not in engine.containers  # the member starts its own
    sync(job, on_member)
    assert all(engine.containers[name].state.running for name in names.values())
    return names


def job_node() -> str:
    return settings.SAGEPORT_NODE_NAME


def test_each_node_starts_its_instances_on_one_overlay_network_and_the_artifacts_merge(
    engine, store, on_member
):
    job = spanning_job()
    names = until_both_run(job, engine, on_member)

    network = containers.network_name(job)
    assert engine.networks[network]["overlay"] is True
    assert engine.networks[network]["labels"][labels.RESOURCE] == job.training_job_arn
    specs = {host: engine.containers[name].spec for host, name in names.items()}
    assert specs["algo-1"].labels[labels.NODE] == job_node()
    assert specs["algo-2"].labels[labels.NODE] == MEMBER
    assert {spec.network for spec in specs.values()} == {network}
    assert [spec.network_aliases for spec in specs.values()] == [("algo-1",), ("algo-2",)]
    # The two nodes wrote the same /etc/hosts and resourceconfig.json (but current_host).
    leader_host = workspace.host_workspace(job, "algo-1")
    with on_member():
        member_host = workspace.host_workspace(job, "algo-2")
        member_hosts_file = member_host.hosts_file.read_text()
        member_config = json.loads((member_host.config_dir / "resourceconfig.json").read_text())
        (member_host.model_dir / "from-algo-2").write_bytes(b"2")
    assert member_hosts_file.splitlines()[2:] == [
        f"{specs['algo-1'].ipv4_address}\talgo-1", f"{specs['algo-2'].ipv4_address}\talgo-2",
    ]
    assert member_hosts_file == leader_host.hosts_file.read_text()
    assert member_config["hosts"] == ["algo-1", "algo-2"] and member_config["current_host"] == "algo-2"
    (leader_host.model_dir / "from-algo-1").write_bytes(b"1")

    engine.print(names["algo-1"], "epoch 1 on algo-1")
    engine.print(names["algo-2"], "epoch 1 on algo-2")
    engine.exit(names["algo-1"], 0)
    engine.exit(names["algo-2"], 0)
    sync(job, on_member)  # collects its container's output, reports its exit
    step(job)
    assert t.state_of(job) == t.UPLOADING
    for host in ("algo-1", "algo-2"):  # each node copied its own container's output, once
        assert log_store.tail(containers.training_stream(job, host), 10) == [f"epoch 1 on {host}"]
    step(job)
    assert t.state_of(job) == t.UPLOADING  # waits for the member's model and output
    sync(job, on_member)
    assert step(job) is None

    assert t.state_of(job) == t.COMPLETED
    assert store.tar_members(artifact_uri(job, "model.tar.gz")) == {"from-algo-1": b"1", "from-algo-2": b"2"}
    assert [key for key in store.keys("bucket") if "sageport-instances" in key] == []
    sync(job, on_member)  # the member removes what it held
    assert engine.containers == {}
    with on_member():
        assert not workspace.job_root(job).exists()


def test_a_member_instance_failing_fails_the_job_with_its_failure_file_and_stops_the_other(
    engine, store, on_member
):
    job = spanning_job()
    names = until_both_run(job, engine, on_member)
    with on_member():
        failure_file = workspace.host_workspace(job, "algo-2").output_dir / "failure"
        failure_file.write_text("CUDA out of patience")
    engine.exit(names["algo-2"], 3)
    sync(job, on_member)

    step(job)  # the job's node decides and sends SIGTERM to its own container
    assert engine.containers[names["algo-1"]].state.exited
    step(job)
    step(job)
    sync(job, on_member)  # uploads what algo-2 left
    while step(job) is not None:
        pass

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason == "AlgorithmError: CUDA out of patience, exit code: 3"


def test_an_engine_outside_a_swarm_fails_the_job_naming_the_setting(engine, store, on_member):
    engine.swarm = False
    job = spanning_job()
    step(job)
    sync(job, on_member)
    step(job)
    assert t.state_of(job) == t.TRAINING

    step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason.startswith("InternalServerError: ")
    assert "not in swarm mode" in job.failure_reason


def test_a_retry_removes_what_the_lost_attempt_left_on_the_member_before_starting_again(
    engine, store, on_member
):
    job = spanning_job(RetryStrategy={"MaximumRetryAttempts": 1})
    names = until_both_run(job, engine, on_member)
    with on_member():
        stale = workspace.host_workspace(job, "algo-2").model_dir / "from-the-lost-attempt"
        stale.write_bytes(b"old")
    engine.vanish(names["algo-1"])

    step(job)
    assert t.state_of(job) == t.RESTARTING
    step(job)  # the job's node removes its own leftovers and starts again
    assert t.state_of(job) == t.STARTING
    sync(job, on_member)

    assert names["algo-2"] not in engine.containers  # never taken for the new attempt's
    step(job)  # placed again: the member gets algo-2 again
    assert t.state_of(job) == t.DOWNLOADING
    sync(job, on_member)
    with on_member():
        assert not stale.exists()


def test_a_lost_member_node_fails_the_job_naming_that_node(engine, store, on_member, monkeypatch):
    job = spanning_job()
    until_both_run(job, engine, on_member)
    silent_since = timezone.now() - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS + 1)
    Node.objects.filter(name=MEMBER).update(heartbeat_at=silent_since)
    monkeypatch.setattr(tasks.reconcile_training_job, "delay", lambda job_id: None)

    tasks._handle_lost_nodes()

    job.refresh_from_db()
    assert t.state_of(job) == t.FAILED
    assert f"the node {MEMBER} that ran it stopped sending heartbeats" in job.failure_reason


def test_a_lost_node_restarts_the_job_once_naming_it_whichever_worker_sweeps_first(
    engine, store, on_member, monkeypatch
):
    """Sweeps overlap. One that listed the job while another was moving it off the lost node (its
    placements already released) leaves it alone: the job restarts once, and its
    Restarting message names the node (a chaos run once read "the node None")."""
    job = spanning_job(RetryStrategy={"MaximumRetryAttempts": 1})
    until_both_run(job, engine, on_member)
    Node.objects.filter(name=MEMBER).update(lost_at=timezone.now())
    monkeypatch.setattr(tasks.reconcile_training_job, "delay", lambda job_id: None)
    first_sweeper_midway = list(Placement.objects.filter(job=job))
    Placement.objects.filter(job=job).delete()  # what the first sweeper does before its transition

    assert not tasks._move_off_lost_node(job.pk)  # the second sweeper
    job.refresh_from_db()
    assert t.state_of(job) == t.TRAINING
    for row in first_sweeper_midway:  # the first sweeper, as if it had not begun
        row.save(force_insert=True)
    tasks._handle_lost_nodes()
    tasks._handle_lost_nodes()

    job.refresh_from_db()
    restarting = [row for row in t.history(job) if row.status == "Restarting"]
    assert job.restart_count == 1 and len(restarting) == 1
    assert restarting[0].status_message == (
        f"Restarting the training job (retry 1 of 1): the node {MEMBER} that ran it "
        "stopped sending heartbeats."
    )


def test_a_member_whose_engine_fails_its_start_by_a_fault_of_its_own_restarts_the_job(
    engine, store, on_member
):
    """The member reports an InternalServerError, which the job's node retries per RetryStrategy."""
    job = spanning_job(RetryStrategy={"MaximumRetryAttempts": 1})
    member_container = containers.container_name(job, "algo-2")
    engine.faulting[member_container] = "context deadline exceeded"
    for _ in range(2):
        step(job)
    sync(job, on_member)
    step(job)
    step(job)
    assert t.state_of(job) == t.TRAINING
    sync(job, on_member)  # the member's start fails
    assert member_container not in engine.containers

    step(job)

    assert (t.state_of(job), job.restart_count) == (t.RESTARTING, 1)
    assert t.history(job)[-1].status_message.startswith(
        "Restarting the training job (retry 1 of 1): could not start the container for algo-2: "
    )
    step(job)
    assert t.state_of(job) == t.STARTING
    sync(job, on_member)
    until_both_run(job, engine, on_member)  # the second attempt runs on both nodes
