"""runPolicy.restartPolicy through the operator, the fake runtime and the fake agents: which faults
restart the processes in place (PLR), which create every pod again (JLR), when the job fails,
the evaluation window, and repeat-offender nodes.

What the fields mean is AWS's (elastic/restarts.py cites it): the HyperPod training operator
guide's run-policy table ("numRestartBeforeFullJobRestart: Maximum number of restarts at the
process level before the operator restarts at the job level", "evalPeriodSeconds: The period of
evaluating the restart limit in seconds", "maxFullJobRestarts: Maximum number of full job
restarts before the job fails"), the CRD's ("maxNumRepeatOffendersToAvoid: The max repeat
offenders to exclude in next job level restart"; status.restartStatus and
latestFaultyPodInstanceList.restartType "PLR or JLR"), and AWS's agent ("Operator triggers PLR
across ALL Agents via a `/stop` command")."""
import pytest
from django.utils import timezone

from capacity.gpus import free_gpus
from capacity.models import GpuAllocation
from elastic import spec as job_spec
from elastic.models import ElasticReplica, HyperPodJob, JobPhase
from tests.unit.elastic import test_operator as operator_tests
from tests.unit.elastic.fakes import manifest, submit
from tests.unit.elastic.test_operator import ports, settle
from tests.unit.training.test_scheduler import make_node

pytestmark = pytest.mark.django_db(transaction=True)
# The operator tests' fixtures (a 4-GPU node, the fake runtime and agents, priority weights).
engine, agents, node, weights = (operator_tests.engine, operator_tests.agents, operator_tests.node,
                                 operator_tests.weights)


def restarting_job(retries=10, replicas=2, **restart_policy) -> HyperPodJob:
    policy = {"evalPeriodSeconds": 3600, **restart_policy}
    run_policy = {"jobMaxRetryCount": retries, "restartPolicy": policy}
    return submit(manifest(groups=[{"name": "pods", "replicas": replicas}], run_policy=run_policy))


def containers(engine, job: HyperPodJob) -> dict[int, str]:
    """Each replica's container id, by index."""
    by_name = {state.name: state.id for state in engine.find({"sageport.role": "elastic"})}
    return {r.index: by_name.get(r.container_name) for r in ElasticReplica.objects.filter(job=job)}


def gpus(job: HyperPodJob) -> dict[int, list[str]]:
    return {r.index: sorted(g.device_id for g in GpuAllocation.objects.filter(replica=r))
            for r in ElasticReplica.objects.filter(job=job)}


def fault(agents, engine, job: HyperPodJob, index: int = 1) -> None:
    """The replica's agent reports `faulted` (a worker crashed, or a log rule fired)."""
    name = ElasticReplica.objects.get(job=job, index=index).container_name
    agents.state[next(s.host_port for s in engine.find({}) if s.name == name)] = "faulted"


def restart_status(job: HyperPodJob) -> tuple[int, int]:
    counts = job.status["restartStatus"]
    return counts["restartCount"], counts["fullJobRestartCount"]


def test_a_faulted_agent_restarts_every_replicas_processes_in_place(engine, agents):
    job = restarting_job(numRestartBeforeFullJobRestart=2)
    (job,) = settle(job)
    before, held = containers(engine, job), gpus(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 2, 1)
    assert containers(engine, job) == before and gpus(job) == held  # no pod created again
    for port in ports(engine, job):  # every agent stopped its workers, then started them again
        assert agents.stops[port] == [{"is_graceful": False, "timeout": 30}]
        assert [body["faultCount"] for body in agents.started[port]] == [0, 1]
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "PLR"
    assert restart_status(job) == (1, 0)
    assert job.status["restartStatus"]["currentEvalPeriod"] > 0


def test_an_exited_container_starts_again_in_its_pod_on_its_gpus(engine, agents):
    job = restarting_job(numRestartBeforeFullJobRestart=1)
    (job,) = settle(job)
    before, held = containers(engine, job), gpus(job)
    engine.exit(ElasticReplica.objects.get(job=job, index=1).container_name, 1)
    (job,) = settle(job)
    assert (job.phase, job.fault_count) == (JobPhase.RUNNING, 1)
    after = containers(engine, job)
    assert after[0] == before[0] and after[1] != before[1]  # only the dead container is new
    assert gpus(job) == held
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "PLR"


def test_past_num_restart_before_full_job_restart_every_pod_is_created_again(engine, agents):
    job = restarting_job(numRestartBeforeFullJobRestart=1)
    (job,) = settle(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    before, held = containers(engine, job), gpus(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert (job.phase, job.world_size, job.fault_count) == (JobPhase.RUNNING, 2, 2)
    after = containers(engine, job)
    assert all(after[index] != before[index] for index in before)
    assert gpus(job)[0] == held[0] and gpus(job)[1] != held[1]  # the faulty replica's GPU avoided
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "JLR"
    assert restart_status(job) == (0, 1)  # standard restarts counted since the last full one
    fault(agents, engine, job)
    (job,) = settle(job)
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "PLR"
    assert restart_status(job) == (1, 1)


def test_past_max_full_job_restarts_the_job_fails_and_frees_everything(engine, agents, node):
    job = restarting_job(numRestartBeforeFullJobRestart=1, maxFullJobRestarts=1)
    (job,) = settle(job)
    for expected in ("PLR", "JLR", "PLR"):  # standard restarts are allowed again after a full one
        fault(agents, engine, job)
        (job,) = settle(job)
        restart_type = job.status["latestFaultyPodInstanceList"]["restartType"]
        assert (job.phase, restart_type) == (JobPhase.RUNNING, expected)
    fault(agents, engine, job)
    (job,) = settle(job)
    failed = job.status["conditions"][-1]
    assert job.phase == JobPhase.FAILED
    assert (failed["type"], failed["reason"]) == ("Failed", "MaxFullJobRestartsReached")
    assert "maxFullJobRestarts (1)" in failed["message"]
    assert engine.find({"sageport.role": "elastic"}) == [] and len(free_gpus(node)) == 4


def test_job_max_retry_count_bounds_every_kind_of_restart(engine, agents):
    job = restarting_job(retries=1, numRestartBeforeFullJobRestart=5)
    (job,) = settle(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert (job.phase, job.status["conditions"][-1]["reason"]) == (JobPhase.FAILED, "JobMaxRetryCountReached")


def test_a_new_evaluation_period_starts_the_counts_again(engine, agents):
    job = restarting_job(numRestartBeforeFullJobRestart=1, maxFullJobRestarts=0, evalPeriodSeconds=60)
    (job,) = settle(job)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert restart_status(job) == (1, 0)
    window = {**job.restarts, "started": timezone.now().timestamp() - 61}  # the period ran out
    HyperPodJob.objects.filter(pk=job.pk).update(restarts=window)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert job.phase == JobPhase.RUNNING
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "PLR"
    assert restart_status(job) == (1, 0)
    fault(agents, engine, job)  # within the new period: no full job restart is allowed
    (job,) = settle(job)
    assert job.phase == JobPhase.FAILED
    assert job.status["conditions"][-1]["reason"] == "MaxFullJobRestartsReached"


def test_a_vanished_container_has_no_pod_to_restart_in_place(engine, agents):
    job = restarting_job(numRestartBeforeFullJobRestart=3)
    (job,) = settle(job)
    engine.vanish(ElasticReplica.objects.get(job=job, index=1).container_name)
    (job,) = settle(job)
    assert job.phase == JobPhase.RUNNING
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "JLR"


def test_without_a_restart_policy_every_restart_is_a_full_one(engine, agents):
    job = submit(manifest(groups=[{"name": "pods", "replicas": 2}], run_policy={"jobMaxRetryCount": 3}))
    (job,) = settle(job)
    before = containers(engine, job)
    fault(agents, engine, job)
    (job,) = settle(job)
    assert job.status["latestFaultyPodInstanceList"]["restartType"] == "JLR"
    assert all(containers(engine, job)[index] != before[index] for index in before)
    assert "restartStatus" not in job.status


def test_a_full_job_restart_moves_the_job_off_a_repeat_offender_node(engine, agents, node):
    other = make_node(name="zz-other-node", gpus=4)
    job = restarting_job(maxNumRepeatOffendersToAvoid=1)  # every restart is a full one
    (job,) = settle(job)
    assert job.node == node
    fault(agents, engine, job)
    (job,) = settle(job)
    assert job.node == node  # one fault does not make an offender
    fault(agents, engine, job)
    (job,) = settle(job)
    assert (job.phase, job.node, job.world_size) == (JobPhase.RUNNING, other, 2)
    assert job.status["latestFaultyPodInstanceList"]["faultyInstanceIdList"] == [node.name]
    assert len(free_gpus(node)) == 4


def test_on_one_node_a_job_avoiding_its_node_waits_for_another(engine, agents, node):
    job = restarting_job(maxNumRepeatOffendersToAvoid=1)
    (job,) = settle(job)
    for _ in range(2):
        fault(agents, engine, job)
        (job,) = settle(job)
    assert job.phase == JobPhase.PENDING
    waiting = job.status["conditions"][-1]
    assert (waiting["type"], waiting["reason"]) == ("Restarting", "Fault")
    assert waiting["message"] == f"Waiting for a node other than the repeat offenders {node.name}."
    other = make_node(name="zz-other-node", gpus=4)
    (job,) = settle(job)
    assert (job.phase, job.node) == (JobPhase.RUNNING, other)


@pytest.mark.parametrize("policy, field", [
    ({"numRestartBeforeFullJobRestart": 1}, "evalPeriodSeconds"),
    ({"evalPeriodSeconds": 0}, "evalPeriodSeconds"),
    ({"evalPeriodSeconds": 60, "maxFullJobRestarts": -1}, "maxFullJobRestarts"),
    ({"evalPeriodSeconds": 60, "maxNumRepeatOffendersToAvoid": "2"}, "maxNumRepeatOffendersToAvoid"),
])
def test_a_bad_restart_policy_is_refused_naming_its_field(policy, field):
    document = manifest(run_policy={"restartPolicy": policy})
    fields = [error.field for error in job_spec.validate(document)]
    assert fields == [f"spec.runPolicy.restartPolicy.{field}"]
