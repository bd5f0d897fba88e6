"""The HyperPod training operator driven one look at a time through the fake runtime and fake
agents (tests/unit/elastic/fakes.py): placement, growth, preemption, faults, completion and
deletion, as the job's status and the agents' commands show them. No Docker, no torch."""
import pytest
from django.utils import timezone

from accounts.models import AccessKey, ContainerGrant
from capacity.gpus import free_gpus
from capacity.models import GpuAllocation
from clusters.models import Cluster, ClusterMember, InstanceGroup
from elastic import operator, priorities, reaper, replicas
from elastic.models import ElasticReplica, HyperPodJob, JobPhase
from runtime.fake import FakeRuntime
from tests.unit.elastic.fakes import FakeAgents, manifest, submit
from tests.unit.training.test_scheduler import make_job as make_training_job
from tests.unit.training.test_scheduler import make_node
from training import priority as training_priority
from training import scheduler
from training.models import TrainingJob
from training.priority import PRIORITY_TAG

pytestmark = pytest.mark.django_db(transaction=True)

WEIGHTS = {"high": 100, "mid": 50, "low": 10}
ELASTIC_1_TO_4 = {"minReplicas": 1, "maxReplicas": 4, "scalingTimeoutInSeconds": 0,
                  "gracefulShutdownTimeoutInSeconds": 120, "faultyScaleDownTimeoutInSeconds": 0}


@pytest.fixture(autouse=True)
def node(settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    return make_node(name=settings.SAGEPORT_NODE_NAME, gpus=4)


@pytest.fixture(autouse=True)
def weights(monkeypatch):
    for module in (priorities, training_priority):
        monkeypatch.setattr(module, "priority_weight", lambda account, region, name: WEIGHTS.get(name))


@pytest.fixture(autouse=True)
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=("elastic:latest",))
    monkeypatch.setattr(operator, "get_runtime", lambda: fake)
    return fake


@pytest.fixture(autouse=True)
def agents(monkeypatch) -> FakeAgents:
    fake = FakeAgents()
    monkeypatch.setattr(operator, "Agent", fake.agent)
    return fake


def look(job: HyperPodJob) -> HyperPodJob | None:
    """One reconcile, as the message due now would run it; the row reloaded (None once deleted)."""
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=None)
    operator.reconcile(job.pk)
    return HyperPodJob.objects.filter(pk=job.pk).first()


def settle(*jobs: HyperPodJob, looks: int = 12) -> list[HyperPodJob]:
    """A few rounds of looks at every job (what the chains do over a few seconds)."""
    for _ in range(looks):
        jobs = tuple(look(job) or job for job in jobs)
    return list(jobs)


def ports(engine: FakeRuntime, job: HyperPodJob) -> list[int]:
    return [state.host_port for state in engine.find({"sageport.role": "elastic"})
            if state.name.startswith(f"sageport-{_stack()}-hpj-{job.pk}-") and state.running]


def _stack() -> str:
    from django.conf import settings
    return settings.SAGEPORT_STACK_ID


def last_starts(agents: FakeAgents, engine: FakeRuntime, job: HyperPodJob) -> list[dict]:
    return sorted((agents.started[port][-1] for port in ports(engine, job)), key=lambda body: body["rank"])


def complete(agents: FakeAgents, engine: FakeRuntime, job: HyperPodJob) -> None:
    agents.set_all("completed", ports(engine, job))


def elastic_job(**elastic) -> HyperPodJob:
    group = {"name": "pods", "replicas": 1, "max_replicas": elastic.get("maxReplicas", 4)}
    return submit(manifest(elastic={**ELASTIC_1_TO_4, **elastic}, groups=[group]))


def fixed_job(replicas: int, priority_class: str | None = None) -> HyperPodJob:
    return submit(manifest(groups=[{"name": "pods", "replicas": replicas, "priority_class": priority_class}]))


def test_an_elastic_job_starts_with_what_fits_and_grows_when_capacity_frees(engine, agents, node):
    blocker = fixed_job(3)
    (blocker,) = settle(blocker)
    assert blocker.phase == JobPhase.RUNNING
    job = elastic_job()
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)
    assert last_starts(agents, engine, job)[0] | {"rank": 0} == last_starts(agents, engine, job)[0]

    complete(agents, engine, blocker)
    blocker, job = settle(blocker, job)
    assert blocker.phase == JobPhase.SUCCEEDED
    assert (job.phase, job.world_size, job.restart_count) == (JobPhase.RUNNING, 4, 1)
    starts = last_starts(agents, engine, job)
    assert [body["rank"] for body in starts] == [0, 1, 2, 3]
    assert {body["nnodes"] for body in starts} == {4}
    assert {body["master_addr"] for body in starts} == {f"{job.name}-pods-0"}
    first = ports(engine, job)[0]
    assert agents.stops[first] == [{"is_graceful": True, "timeout": 120}]  # the resize was graceful
    assert job.status["elasticScalingStatus"]["targetReplicas"] == {"pods": 4}
    assert job.status["conditions"][-1]["type"] == "Running"
    assert free_gpus(node) == []
    # Every replica's /etc/hosts names every pod the job can have (its largest world, 4) at its
    # address on the job network, and nothing else.
    network = replicas.network_name(job)
    addresses = {state.name: state.addresses[network] for state in engine.find({"sageport.role": "elastic"})}
    for replica in ElasticReplica.objects.filter(job=job):
        lines = replicas.hosts_file(job, replica).read_text().splitlines()
        named = dict(reversed(line.split("\t")) for line in lines if "localhost" not in line)
        assert named == {f"{job.name}-pods-{r.index}": addresses[r.container_name]
                         for r in ElasticReplica.objects.filter(job=job)}


def test_growth_waits_for_the_scaling_timeout_since_the_last_resize(engine, agents):
    blocker = fixed_job(3)
    settle(blocker)
    job = elastic_job(scalingTimeoutInSeconds=3600)
    (job,) = settle(job)
    HyperPodJob.objects.filter(pk=job.pk).update(started_at=timezone.now())
    complete(agents, engine, blocker)
    blocker, job = settle(blocker, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)  # an hour has not passed


def test_the_scale_up_snooze_also_holds_growth_back(engine, agents):
    blocker = fixed_job(3)
    settle(blocker)
    snooze = {"restartPolicy": {"evalPeriodSeconds": 3600, "scaleUpSnoozeTimeInSeconds": 3600}}
    group = {"name": "pods", "replicas": 1, "max_replicas": 4}
    document = manifest(elastic=ELASTIC_1_TO_4, groups=[group], run_policy=snooze)
    job = submit(document)
    (job,) = settle(job)
    complete(agents, engine, blocker)
    blocker, job = settle(blocker, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)


def test_replicas_get_what_the_agent_and_torchrun_read_from_their_pod(engine, agents):
    job = elastic_job(maxReplicas=2)
    (job,) = settle(job)
    first = ElasticReplica.objects.get(job=job, index=0).container_name
    spec = engine.containers[first].spec
    assert spec.environment["NNODES"] == "1"  # the world it was created for: /start says the rest
    assert spec.environment["HYPERPOD_SIGNAL_COORDINATION"] == "distributed"
    assert spec.environment["PET_NPROC_PER_NODE"] == "auto"
    assert spec.environment["NVIDIA_VISIBLE_DEVICES"] in {"0", "1", "2", "3"}
    assert (spec.published_port, spec.hostname) == (8080, f"{job.name}-pods-0")


def test_replicas_act_as_the_execution_role_of_their_nodes_instance_group(engine, agents, node):
    """A pod on a HyperPod node acts as the instance group's ExecutionRole, session `SageMaker`
    (tests/unit/identity/test_container_roles.py cites AWS)."""
    role = "arn:aws:iam::123456789012:role/service-role/HyperPodNodeRole"
    now = timezone.now()
    cluster = Cluster.objects.create(
        account_id="123456789012", region="us-east-1", cluster_name="pods", cluster_arn="arn:cluster/pods",
        creation_time=now, provisioning_since=now,
    )
    group = InstanceGroup.objects.create(
        cluster=cluster, name="gpus", instance_type="ml.g5.12xlarge", target_count=1,
        spec={"ExecutionRole": role}, position=0,
    )
    ClusterMember.objects.create(group=group, node=node, instance_id="i-0", launch_time=now)
    (job,) = settle(fixed_job(1))
    spec = engine.containers[ElasticReplica.objects.get(job=job, index=0).container_name].spec
    granted = ContainerGrant.objects.get(token=spec.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"])
    assert granted.role_arn == role
    assert set(AccessKey.objects.filter(issued_for=granted.holder).values_list("principal", flat=True)) == {
        "assumed-role/HyperPodNodeRole/SageMaker"
    }


def test_a_higher_priority_job_makes_an_elastic_job_shrink_gracefully_then_it_grows_back(engine, agents):
    job = elastic_job()
    (job,) = settle(job)
    assert job.world_size == 4
    urgent = fixed_job(2, priority_class="high")
    urgent, job = settle(urgent, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    assert (urgent.phase, urgent.world_size) == (JobPhase.RUNNING, 2)
    assert all(stop["is_graceful"] for port in ports(engine, job) for stop in agents.stops[port])
    assert ElasticReplica.objects.filter(job=job).count() == 2

    complete(agents, engine, urgent)
    urgent, job = settle(urgent, job)
    assert urgent.phase == JobPhase.SUCCEEDED
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 4)


def test_a_two_level_job_only_ever_loses_its_elastic_group(engine, agents):
    two_level = submit(manifest(
        elastic={**ELASTIC_1_TO_4, "minReplicas": 2, "maxReplicas": 4, "replicaIncrementStep": 2},
        groups=[{"name": "base", "replicas": 2, "priority_class": "high"},
                {"name": "elastic", "replicas": 0, "max_replicas": 2, "priority_class": "low"}],
    ))
    (two_level,) = settle(two_level)
    assert two_level.world_size == 4
    needs_three = fixed_job(3, priority_class="mid")
    needs_three, two_level = settle(needs_three, two_level)
    assert needs_three.phase == JobPhase.PENDING  # taking 2 is not enough, the base group stays
    assert two_level.world_size == 4
    HyperPodJob.objects.filter(pk=needs_three.pk).delete()
    needs_two = fixed_job(2, priority_class="mid")
    needs_two, two_level = settle(needs_two, two_level)
    assert needs_two.phase == JobPhase.RUNNING
    assert (two_level.world_size, two_level.status["elasticScalingStatus"]["targetReplicas"]) == (
        2, {"base": 2, "elastic": 0})


def test_discrete_sizes_are_the_only_sizes_a_job_runs_at(engine, agents):
    blocker = fixed_job(1)
    settle(blocker)
    job = elastic_job(minReplicas=1, maxReplicas=4, replicaDiscreteValues=[1, 2])
    (job,) = settle(job)
    assert job.world_size == 2  # three GPUs free, but 3 is not an allowed size


def test_a_lower_priority_job_without_elasticity_is_evicted_and_queues_again(engine, agents):
    low = fixed_job(4, priority_class="low")
    (low,) = settle(low)
    urgent = fixed_job(1, priority_class="high")
    urgent, low = settle(urgent, low)
    assert urgent.phase == JobPhase.RUNNING
    assert (low.phase, low.status["conditions"][-1]["reason"]) == (JobPhase.PENDING, "Evicted")
    complete(agents, engine, urgent)
    urgent, low = settle(urgent, low)
    assert (low.phase, low.world_size) == (JobPhase.RUNNING, 4)


def test_a_vanished_replica_is_replaced_on_spare_capacity(engine, agents, node):
    job = elastic_job(maxReplicas=2)
    (job,) = settle(job)
    assert job.world_size == 2
    lost = ElasticReplica.objects.get(job=job, index=1)
    lost_gpu = GpuAllocation.objects.get(replica=lost).device_id
    engine.vanish(lost.container_name)
    (job,) = settle(job)
    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 2, 1)
    assert {body["faultCount"] for body in last_starts(agents, engine, job)} == {1}
    replacement = ElasticReplica.objects.get(job=job, index=1)
    assert GpuAllocation.objects.get(replica=replacement).device_id != lost_gpu
    assert job.status["latestFaultyPodInstanceList"] == {
        "restartType": "JLR", "faultyPodList": [f"{job.name}-pods-1"], "faultyRankList": ["1"],
        "faultyInstanceIdList": [node.name]}
    assert [pod["name"] for pod in job.status["jobPods"]] == [f"{job.name}-pods-0", f"{job.name}-pods-1"]


def test_a_replica_container_created_but_never_started_is_started_and_the_world_forms(engine, agents):
    """A worker killed between creating a replica's container and starting it leaves it "created":
    the next look starts it instead of waiting for it until the startup deadline."""
    job = fixed_job(2)
    while not engine.find({"sageport.role": "elastic"}):
        job = look(job)
    assert job.phase == JobPhase.CREATING
    engine.leave_created(ElasticReplica.objects.get(job=job, index=1).container_name)

    (job,) = settle(job)

    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    assert [body["rank"] for body in last_starts(agents, engine, job)] == [0, 1]


def test_without_spare_capacity_a_faulty_job_continues_smaller_then_grows_back(engine, agents):
    job = elastic_job(faultyScaleDownTimeoutInSeconds=3600)
    (job,) = settle(job)
    engine.vanish(ElasticReplica.objects.get(job=job, index=1).container_name)
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.STOPPING, 4)  # waiting for spare capacity
    assert job.status["conditions"][-1]["message"].startswith("Waiting for capacity to replace")
    HyperPodJob.objects.filter(pk=job.pk).update(short_since=timezone.now() - timezone.timedelta(hours=2))
    (job,) = settle(job, looks=3)
    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 3, 1)
    (job,) = settle(job)
    assert job.world_size == 4  # the avoided GPU is taken again by a later resize


def test_the_checkpoint_every_agent_reported_is_sent_back_on_the_next_start(engine, agents):
    blocker = fixed_job(2)
    settle(blocker)
    job = elastic_job()
    (job,) = settle(job)
    assert job.world_size == 2
    first, second = ports(engine, job)
    agents.progress[first] = {"s3://b/ckpt": {"progressData": "s3://b/ckpt/step_30", "progressCount": 30}}
    agents.progress[second] = {"s3://b/ckpt": {"progressData": "s3://b/ckpt/step_20", "progressCount": 20}}
    complete(agents, engine, blocker)
    blocker, job = settle(blocker, job)
    assert job.world_size == 4
    assert {str(body["progress"]) for body in last_starts(agents, engine, job)} == {
        str({"s3://b/ckpt": {"progressData": "s3://b/ckpt/step_20", "progressCount": 20}})}


def test_an_agent_refusing_start_is_a_fault_and_its_replica_is_replaced(engine, agents):
    job = fixed_job(2)
    look(job)  # Pending → Creating
    look(job)  # the containers run
    refusing = ElasticReplica.objects.get(job=job, index=1).container_name
    agents.refusing_start.add(next(s.host_port for s in engine.find({}) if s.name == refusing))
    (job,) = settle(job)
    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 2, 1)
    assert job.status["latestFaultyPodInstanceList"]["faultyPodList"] == [f"{job.name}-pods-1"]


def test_faults_beyond_job_max_retry_count_fail_the_job_and_free_everything(engine, agents, node):
    job = submit(manifest(groups=[{"name": "pods", "replicas": 2}], run_policy={"jobMaxRetryCount": 0}))
    (job,) = settle(job)
    name = ElasticReplica.objects.get(job=job, index=0).container_name
    engine.exit(name, 1)
    (job,) = settle(job)
    assert job.phase == JobPhase.FAILED
    assert f"{name} exited (exit code 1)" in job.status["conditions"][-1]["message"]
    assert engine.find({"sageport.role": "elastic"}) == []
    assert len(free_gpus(node)) == 4


def test_completion_shuts_the_agents_down_and_frees_the_gpus(engine, agents, node):
    job = fixed_job(2)
    (job,) = settle(job)
    used = ports(engine, job)
    complete(agents, engine, job)
    (job,) = settle(job)
    assert job.phase == JobPhase.SUCCEEDED
    assert agents.shutdowns == set(used)
    assert job.status["completionTime"] and job.status["conditions"][-1]["type"] == "Succeeded"
    assert len(free_gpus(node)) == 4


def test_a_replica_that_ignores_the_graceful_stop_is_removed_after_the_timeout(engine, agents):
    job = elastic_job(gracefulShutdownTimeoutInSeconds=30)
    (job,) = settle(job)
    stubborn = ports(engine, job)[3]
    agents.unresponsive_to_stop.add(stubborn)
    urgent = fixed_job(2, priority_class="high")
    urgent, job = settle(urgent, job, looks=3)
    assert job.phase == JobPhase.STOPPING
    HyperPodJob.objects.filter(pk=job.pk).update(stop_sent_at=timezone.now() - timezone.timedelta(seconds=41))
    urgent, job = settle(urgent, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    assert urgent.phase == JobPhase.RUNNING


def test_deletion_removes_the_containers_the_rows_and_the_gpus(engine, agents, node):
    job = elastic_job()
    (job,) = settle(job)
    HyperPodJob.objects.filter(pk=job.pk).update(deletion_requested_at=timezone.now())
    assert look(job) is None
    assert engine.find({"sageport.role": "elastic"}) == []
    assert ElasticReplica.objects.count() == 0 and len(free_gpus(node)) == 4


def test_a_training_job_with_a_higher_priority_tag_takes_gpus_back_from_an_elastic_job(engine, agents):
    job = elastic_job()
    (job,) = settle(job)
    assert job.world_size == 4
    training = make_training_job("ml.p3.2xlarge", count=2)
    TrainingJob.objects.filter(pk=training.pk).update(tags=[{"Key": PRIORITY_TAG, "Value": "high"}])
    training.refresh_from_db()
    assert scheduler.place(training).for_capacity
    assert training_priority.ask_for_gpus(training).startswith("Preempting lower-priority jobs")
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    assert isinstance(scheduler.place(training), scheduler.Placed)


def test_an_untagged_training_job_takes_nothing_back_but_elastic_jobs_do_not_grow_past_it(engine, agents):
    blocker = fixed_job(3)
    settle(blocker)
    job = elastic_job()
    (job,) = settle(job)
    waiting = make_training_job("ml.g5.12xlarge")  # four GPUs
    assert training_priority.ask_for_gpus(waiting) is None  # weight 0 preempts nobody
    complete(agents, engine, blocker)
    blocker, job = settle(blocker, job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 1)  # the freed GPUs wait for it


def test_the_reaper_removes_containers_and_networks_no_job_owns(engine, agents, monkeypatch):
    monkeypatch.setattr(reaper, "get_runtime", lambda: engine)
    kept, gone = elastic_job(), fixed_job(1)
    kept, gone = settle(kept, gone)
    HyperPodJob.objects.filter(pk=gone.pk).delete()  # as a crash between the rows and the engine
    reaper.reap_elastic_orphans()
    names = {state.name for state in engine.find({"sageport.role": "elastic"})}
    assert names == set(ElasticReplica.objects.filter(job=kept).values_list("container_name", flat=True))
    assert replicas.network_name(gone) not in engine.networks
    assert replicas.network_name(kept) in engine.networks


# --- Run policy (suspend, deadlines, cleanPodPolicy) ----------------------------------------
# HyperPod's CRD describes these fields only in one line each (`sagemaker-hyperpod` 3.12.0,
# hyperpod_pytorch_job_unified_config.RunPolicy: "Suspend suspends HyperPodPytorchJob when set to
# true"; activeDeadlineSeconds "relative to the startTime that the job may be active before the
# system tries to terminate it"); the behaviour is Kubeflow's training operator's, which HyperPod's
# RunPolicy copies: a suspended job has no pods and a `Suspended` condition, resuming resets
# startTime; a job past its active deadline fails with reason DeadlineExceeded (the Kubernetes
# Job's reason for the same field).


def suspend(job: HyperPodJob, value: bool) -> None:
    manifest = job.manifest
    manifest["spec"]["runPolicy"]["suspend"] = value
    HyperPodJob.objects.filter(pk=job.pk).update(manifest=manifest)


def condition(job: HyperPodJob, kind: str) -> dict:
    return next(c for c in job.status["conditions"] if c["type"] == kind)


def test_a_job_submitted_suspended_runs_nothing_until_resumed(engine, agents, node):
    job = submit(manifest(groups=[{"name": "pods", "replicas": 2}], run_policy={"suspend": True}))
    (job,) = settle(job)
    assert job.phase == JobPhase.SUSPENDED
    assert engine.find({"sageport.role": "elastic"}) == [] and len(free_gpus(node)) == 4
    suspended = condition(job, "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("True", "JobSuspended")

    suspend(job, False)
    (job,) = settle(job)
    assert (job.phase, job.world_size) == (JobPhase.RUNNING, 2)
    suspended = condition(job, "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("False", "JobResumed")
    assert job.status["conditions"][-1]["type"] == "Running"


def test_suspending_a_running_job_removes_its_replicas_and_resets_its_start_time(engine, agents, node):
    job = fixed_job(2)
    (job,) = settle(job)
    assert job.status["startTime"]
    suspend(job, True)
    (job,) = settle(job)
    assert job.phase == JobPhase.SUSPENDED and "startTime" not in job.status
    assert engine.find({"sageport.role": "elastic"}) == [] and len(free_gpus(node)) == 4
    assert condition(job, "Running")["status"] == "False"
    assert job.status["conditions"][-1]["type"] == "Suspended"


def test_a_finished_job_is_not_suspended(engine, agents):
    job = fixed_job(1)
    (job,) = settle(job)
    complete(agents, engine, job)
    (job,) = settle(job)
    suspend(job, True)
    (job,) = settle(job)
    assert job.phase == JobPhase.SUCCEEDED


def test_a_job_past_its_active_deadline_fails_with_deadline_exceeded(engine, agents, node):
    job = submit(manifest(groups=[{"name": "pods", "replicas": 2}], run_policy={"activeDeadlineSeconds": 60}))
    (job,) = settle(job)
    assert job.phase == JobPhase.RUNNING
    HyperPodJob.objects.filter(pk=job.pk).update(started_at=timezone.now() - timezone.timedelta(seconds=59.8))
    HyperPodJob.objects.filter(pk=job.pk).update(next_check_at=None)
    assert operator.reconcile(job.pk) <= 0.2  # the next look comes by the deadline, not a poll later
    HyperPodJob.objects.filter(pk=job.pk).update(started_at=timezone.now() - timezone.timedelta(seconds=61))
    (job,) = settle(job)
    assert job.phase == JobPhase.FAILED
    failed = job.status["conditions"][-1]
    assert (failed["type"], failed["reason"]) == ("Failed", "DeadlineExceeded")
    assert "activeDeadlineSeconds (60 s)" in failed["message"]
    assert engine.find({"sageport.role": "elastic"}) == [] and len(free_gpus(node)) == 4


def test_the_startup_deadline_bounds_the_wait_for_ready_agents(engine, agents, settings):
    settings.SAGEPORT_ELASTIC_READY_TIMEOUT_SECONDS = 3600
    document = manifest(groups=[{"name": "pods", "replicas": 1}], run_policy={"startupDeadlineSeconds": 30})
    job = submit(document)
    job = look(look(job))  # Creating, its container started
    agents.set_all("initializing", ports(engine, job))  # an agent that never reports ready
    assert job.phase == JobPhase.CREATING
    HyperPodJob.objects.filter(pk=job.pk).update(phase_since=timezone.now() - timezone.timedelta(seconds=31))
    job = look(job)
    assert job.phase == JobPhase.FAILED
    assert "within 30 s" in job.status["conditions"][-1]["message"]


def test_clean_pod_policy_running_keeps_the_exited_replicas_of_a_failed_job(engine, agents, node):
    document = manifest(groups=[{"name": "pods", "replicas": 2}],
                        run_policy={"jobMaxRetryCount": 0, "cleanPodPolicy": "Running"})
    job = submit(document)
    (job,) = settle(job)
    exited = ElasticReplica.objects.get(job=job, index=0).container_name
    engine.exit(exited, 1)
    (job,) = settle(job)
    assert job.phase == JobPhase.FAILED
    assert [state.name for state in engine.find({"sageport.role": "elastic"})] == [exited]
    assert len(free_gpus(node)) == 4
    look(job)  # the kept container is the job's until it is deleted
    HyperPodJob.objects.filter(pk=job.pk).update(deletion_requested_at=timezone.now())
    assert look(job) is None and engine.find({"sageport.role": "elastic"}) == []
