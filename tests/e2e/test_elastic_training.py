"""Elastic training end to end: HyperPodPyTorchJobs submitted through the Kubernetes client, run
by Sageport's operator with AWS's real `hyperpod-elastic-agent` and torch 2.11 (gloo, CPU) in
every replica, on the test node's four declared GPUs (tests/settings.py).

Each replica runs examples/elastic-training/train.py, which records the samples every rank
trained on, each elastic event it saw (SIGUSR1 from the agent's graceful stop) and the checkpoint
it saved then, in the job's shared volume (a persistentVolumeClaim: a directory of the
namespace under the data dir). From those records the tests check what a user cares about:
no sample trained twice and none skipped across resizes, every resize graceful."""
import json
import time
import uuid
from pathlib import Path

import docker
import kubernetes
import pytest
from django.conf import settings
from kubernetes import client as kube

from bench.elastic import manifest
from tests.conftest import read_env_file
from tests.e2e.conftest import shell_job, unique_name, wait_for_status

GROUP, VERSION, PLURAL = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"
NAMESPACE = "default"
NODE_TYPE = "ml.g5.12xlarge"
ROLE = "arn:aws:iam::123456789012:role/HyperPodRole"
CLASSES = [{"Name": "high", "Weight": 100}, {"Name": "low", "Weight": 10}]
# Generous bounds: a world start imports torch in every replica on a 2-core machine.
PHASE_TIMEOUT = 240.0


@pytest.fixture
def kube_jobs(stack):
    """The Kubernetes client as a user has it: from the kubeconfig the stack writes."""
    kubeconfig = read_env_file(stack.data_dir / "env")["KUBECONFIG"]
    api = kube.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=kubeconfig))
    created: list[str] = []
    yield api, created
    for name in created:  # whatever a failed test left: deleted, and waited gone
        try:
            api.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
        except kube.ApiException as error:
            assert error.status == 404
    for name in created:
        _wait(lambda n=name: _absent(api, n), f"{name} deleted", 60)


@pytest.fixture
def priority_classes(sagemaker):
    """A cluster of the test node with a scheduler config defining `high` and `low`."""
    name = unique_name("elastic")
    arn = sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[{"InstanceGroupName": "gpus", "InstanceType": NODE_TYPE, "InstanceCount": 1,
                         "ExecutionRole": ROLE}],
    )["ClusterArn"]
    sagemaker.create_cluster_scheduler_config(
        Name=f"{name}-priorities", ClusterArn=arn, SchedulerConfig={"PriorityClasses": CLASSES}
    )
    yield
    sagemaker.delete_cluster(ClusterName=arn)
    _wait(lambda: arn not in {c["ClusterArn"] for c in sagemaker.list_clusters()["ClusterSummaries"]},
          "cluster gone", 30)


def job_manifest(name, image, claim, replicas=1, priority="low", elastic=None, **environment) -> dict:
    """The bench's job (bench/elastic.py), with retries for the fault test."""
    return manifest(name, claim, replicas, priority, elastic, image=image, retries=3, **environment)


def submit(kube_jobs, manifest: dict) -> str:
    api, created = kube_jobs
    api.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, manifest)
    created.append(manifest["metadata"]["name"])
    return manifest["metadata"]["name"]


def status_of(kube_jobs, name: str) -> dict:
    api, _ = kube_jobs
    return api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name).get("status", {})


def condition(status: dict) -> str:
    true = [c["type"] for c in status.get("conditions", []) if c["status"] == "True"]
    return true[-1] if true else ""


def replicas_running(status: dict) -> int:
    running = condition(status) == "Running"
    return len(status.get("jobPods", [])) if running else 0  # while Running: the world's pods


def wait_running_at(kube_jobs, name: str, size: int) -> dict:
    return _wait(lambda: (s := status_of(kube_jobs, name)) and replicas_running(s) == size and s,
                 f"{name} running at {size}", PHASE_TIMEOUT)


def wait_condition(kube_jobs, name: str, wanted: str) -> dict:
    return _wait(lambda: (s := status_of(kube_jobs, name)) and condition(s) == wanted and s,
                 f"{name} {wanted}", PHASE_TIMEOUT)


def records(claim_dir: Path) -> list[dict]:
    """Every line the ranks wrote, each with the restart count (the agents' faultCount) its file
    is named after: rank-<rank>-restart-<count>-<pid>.jsonl. A line still being written (read
    while its rank appends it) is left for the next read."""
    lines = []
    for path in sorted((claim_dir / "records").glob("*.jsonl")):
        restart = int(path.name.split("-")[3])
        for line in path.read_text().splitlines():
            try:
                lines.append({**json.loads(line), "restart": restart})
            except ValueError:
                continue
    return lines


def trained_samples(entries: list[dict]) -> list[int]:
    return [sample for entry in entries if "samples" in entry for sample in entry["samples"]]


def assert_every_sample_trained_once(entries: list[dict]) -> None:
    """None trained twice, and none skipped before the last world started. The last world ends
    when the test deletes the job, at any moment of a step: each of its ranks recorded that step
    or was stopped first, so samples of its last step may be missing (a run in CI lost 2 of 8)."""
    samples = trained_samples(entries)
    assert len(samples) == len(set(samples)), "a sample was trained twice"
    last_start = max(e["position"] for e in entries if e.get("event") == "started")
    assert sorted(sample for sample in samples if sample < last_start) == list(range(last_start))


def world_sizes(entries: list[dict]) -> list[int]:
    """The world size of each start, in the order the worlds started."""
    starts = [e for e in entries if e.get("event") == "started" and e["rank"] == 0]
    # A fault restart counts up and may resume where the world before it did; a resize resumes
    # further on, from the checkpoint it saved.
    starts.sort(key=lambda start: (start["restart"], start["position"]))
    return [start["world_size"] for start in starts]


def wait_trained_at(claim_dir: Path, size: int) -> None:
    """Wait until a world of `size` trains a step from now on (the agents answer `running` at
    once; the script trains only once torch is imported and the ranks met). Judged by the time
    each step was recorded, not its number: a fault restart trains some step numbers again."""
    since = time.time()

    def trained() -> bool:
        return any(e.get("samples") is not None and e["world_size"] == size and e["time"] >= since
                   for e in records(claim_dir))
    _wait(trained, f"a step trained at world size {size}", PHASE_TIMEOUT)


# The holder ends on StopTrainingJob's SIGTERM: the shell is the container's PID 1, which ignores
# a signal it has no handler for, so a bare `sleep` would hold the GPUs until the SIGKILL after
# the stop grace period (bench/elastic.py's holder does the same).
HOLDER_SCRIPT = "trap 'exit 0' TERM; sleep 600 & wait"


def hold_gpus(sagemaker, bucket: str, image: str, count: int, waiting: bool = False, **overrides) -> str:
    """A training job holding `count` GPUs (one per ml.p3.2xlarge instance) until it is stopped;
    `waiting`: one that waits for them (Pending), which keeps elastic jobs of no higher weight
    from growing into GPUs as they free up, until the test stops it."""
    name = unique_name("gpus")
    sagemaker.create_training_job(**shell_job(
        name, image, bucket, HOLDER_SCRIPT,
        ResourceConfig={"InstanceType": "ml.p3.2xlarge", "InstanceCount": count, "VolumeSizeInGB": 1},
        **overrides,
    ))
    wait_for_status(sagemaker, name, statuses={"Pending" if waiting else "Training"})
    return name


def claim_directory(stack, claim: str) -> Path:
    return Path(stack.data_dir) / "volumes" / stack.account_id / NAMESPACE / claim


def _absent(api, name: str) -> bool:
    try:
        api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    except kube.ApiException as error:
        return error.status == 404
    return False


def _wait(probe, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = probe()
        if answer:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"{what}: not reached within {timeout} s")


def test_an_elastic_job_grows_as_capacity_frees_shrinks_for_a_higher_priority_job_and_grows_back(
    stack, sagemaker, bucket, shell_algo_image, pytorch_elastic_image, kube_jobs, priority_classes
):
    # Three of the four GPUs are held by a training job: the elastic job starts at 1.
    blocker = hold_gpus(sagemaker, bucket, shell_algo_image, 3)
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    elastic = submit(kube_jobs, job_manifest(
        unique_name("elastic"), pytorch_elastic_image, claim, replicas=1, priority="low",
        elastic={"minReplicas": 1, "maxReplicas": 4, "replicaIncrementStep": 1,
                 "scalingTimeoutInSeconds": 5, "gracefulShutdownTimeoutInSeconds": 90}
    ))
    claim_dir = claim_directory(stack, claim)
    wait_running_at(kube_jobs, elastic, 1)
    wait_trained_at(claim_dir, 1)

    # Capacity frees: the job grows to 4.
    sagemaker.stop_training_job(TrainingJobName=blocker)
    grown = wait_running_at(kube_jobs, elastic, 4)
    assert grown["elasticScalingStatus"]["targetReplicas"] == {"pods": 4}
    assert grown["restartCount"] >= 1
    wait_trained_at(claim_dir, 4)

    # A high-priority job needing two GPUs: the elastic job shrinks to 2 and the urgent job runs
    # to completion. A low-priority training job waiting for three GPUs holds the freed ones back
    # until the world of 2 has trained (waiting work of the same weight goes first); once it is
    # stopped, the elastic job grows back.
    urgent = submit(kube_jobs, job_manifest(
        unique_name("urgent"), pytorch_elastic_image, f"claim-{uuid.uuid4().hex[:8]}", replicas=2,
        priority="high", TOTAL_SAMPLES=40,
    ))
    wait_running_at(kube_jobs, elastic, 2)
    gate = hold_gpus(sagemaker, bucket, shell_algo_image, 3, waiting=True,
                     Tags=[{"Key": "kueue.x-k8s.io/priority-class", "Value": "low"}])
    wait_condition(kube_jobs, urgent, "Succeeded")
    wait_trained_at(claim_dir, 2)
    sagemaker.stop_training_job(TrainingJobName=gate)
    wait_running_at(kube_jobs, elastic, 4)
    wait_trained_at(claim_dir, 4)

    api, _ = kube_jobs
    api.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, elastic)
    _wait(lambda: _absent(api, elastic), "elastic job deleted", 60)
    entries = records(claim_dir)
    assert world_sizes(entries)[:4] == [1, 4, 2, 4]
    assert_every_sample_trained_once(entries)
    events = [e for e in entries if e.get("event") == "elastic"]
    assert len(events) >= 1 + 4 + 2  # every rank of each stopped world saw SIGUSR1 and saved
    assert all(event["checkpoint"] for event in events)
    left = docker.from_env().containers.list(
        all=True, filters={"label": ["sageport.role=elastic", f"sageport.stack={settings.SAGEPORT_STACK_ID}"]}
    )
    assert left == []


def kill_replica(pod: str) -> None:
    """SIGKILL a replica's container, as a crashed machine or OOM would end it."""
    [container] = docker.from_env().containers.list(
        filters={"label": [f"sageport.host={pod}", f"sageport.stack={settings.SAGEPORT_STACK_ID}"]}
    )
    container.kill()


def test_a_killed_replica_is_replaced_and_without_spare_capacity_the_job_continues_smaller(
    stack, sagemaker, bucket, shell_algo_image, pytorch_elastic_image, kube_jobs
):
    # One GPU held by a training job: the job (sizes 2 or 4 only) starts at 2, one GPU spare.
    blocker = hold_gpus(sagemaker, bucket, shell_algo_image, 1)
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    claim_dir = claim_directory(stack, claim)
    name = submit(kube_jobs, job_manifest(
        unique_name("faulty"), pytorch_elastic_image, claim, replicas=2, priority="low",
        elastic={"minReplicas": 2, "maxReplicas": 4, "replicaDiscreteValues": [2, 4],
                 "scalingTimeoutInSeconds": 5, "faultyScaleDownTimeoutInSeconds": 1,
                 "gracefulShutdownTimeoutInSeconds": 60}
    ))
    wait_running_at(kube_jobs, name, 2)
    wait_trained_at(claim_dir, 2)

    # A killed replica is replaced on the spare GPU: the world restarts at 2, faultCount 1.
    kill_replica(f"{name}-pods-1")
    _wait(lambda: (s := status_of(kube_jobs, name)) and s.get("latestFaultyPodInstanceList") and s,
          f"{name} reports its faulty replica", PHASE_TIMEOUT)
    replaced = wait_running_at(kube_jobs, name, 2)
    assert replaced["latestFaultyPodInstanceList"]["faultyPodList"] == [f"{name}-pods-1"]
    wait_trained_at(claim_dir, 2)

    # Capacity frees: 4 (3 is not an allowed size). Then a replica dies with no GPU spare: after
    # faultyScaleDownTimeoutInSeconds (short: no GPU can come back meanwhile) the job goes on at 2
    # (a training job waiting for two GPUs takes the two it gives back), and grows back to 4 once
    # that job is stopped.
    sagemaker.stop_training_job(TrainingJobName=blocker)
    wait_running_at(kube_jobs, name, 4)
    wait_trained_at(claim_dir, 4)
    gate = hold_gpus(sagemaker, bucket, shell_algo_image, 2, waiting=True)
    kill_replica(f"{name}-pods-2")
    wait_running_at(kube_jobs, name, 2)
    wait_trained_at(claim_dir, 2)
    sagemaker.stop_training_job(TrainingJobName=gate)
    wait_running_at(kube_jobs, name, 4)
    wait_trained_at(claim_dir, 4)

    entries = records(claim_dir)
    assert sorted({e["restart"] for e in entries}) == [0, 1, 2]  # faultCount, as the workers saw it
    assert world_sizes(entries)[:5] == [2, 2, 4, 2, 4]


# --- Run policy -------------------------------------------------------------------------------
# HyperPod's RunPolicy (sagemaker-hyperpod 3.12.0's model of the CRD) says "Suspend suspends
# HyperPodPytorchJob when set to true" and activeDeadlineSeconds is "the duration in seconds
# relative to the startTime that the job may be active before the system tries to terminate it";
# the conditions are Kubeflow's training operator's and the Kubernetes Job's (Suspended with
# JobSuspended / JobResumed; Failed with DeadlineExceeded).


def job_containers(kube_jobs, name: str) -> list:
    api, _ = kube_jobs
    uid = api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)["metadata"]["uid"]
    return [c for c in docker.from_env().containers.list(all=True, filters={"label": "sageport.role=elastic"})
            if c.labels.get("sageport.resource", "").endswith(f"/{uid}")]


def patch_suspend(kube_jobs, name: str, value: bool) -> dict:
    api, _ = kube_jobs
    body = {"spec": {"runPolicy": {"suspend": value}}}  # sent as application/merge-patch+json
    return api.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name, body)


def suspended(status: dict) -> tuple[str, str]:
    entry = next((c for c in status.get("conditions", []) if c["type"] == "Suspended"), {})
    return entry.get("status", ""), entry.get("reason", "")


def test_a_suspended_job_runs_no_replica_until_a_patch_resumes_it(stack, shell_algo_image, kube_jobs):
    # A tiny replica (busybox sleeping; no agent): enough to see containers come and go.
    manifest = job_manifest(unique_name("suspend"), shell_algo_image, f"claim-{uuid.uuid4().hex[:8]}")
    manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["command"] = ["sleep", "600"]
    manifest["spec"]["runPolicy"]["suspend"] = True
    name = submit(kube_jobs, manifest)
    _wait(lambda: suspended(status_of(kube_jobs, name)) == ("True", "JobSuspended"), f"{name} suspended", 60)
    assert job_containers(kube_jobs, name) == []

    assert patch_suspend(kube_jobs, name, False)["spec"]["runPolicy"]["suspend"] is False
    _wait(lambda: job_containers(kube_jobs, name), f"{name}'s replica created", PHASE_TIMEOUT)
    assert suspended(status_of(kube_jobs, name)) == ("False", "JobResumed")

    patch_suspend(kube_jobs, name, True)
    # the operator removes the replicas first and then records the condition: wait for the latter
    _wait(lambda: suspended(status_of(kube_jobs, name)) == ("True", "JobSuspended"), f"{name} suspended", 60)
    assert job_containers(kube_jobs, name) == []


def test_a_job_active_past_its_deadline_fails_with_deadline_exceeded(
    stack, pytorch_elastic_image, kube_jobs
):
    manifest = job_manifest(unique_name("deadline"), pytorch_elastic_image, f"claim-{uuid.uuid4().hex[:8]}")
    # Counted from startTime, when the world started: short, yet the test need not see it running.
    deadline = 5
    manifest["spec"]["runPolicy"]["activeDeadlineSeconds"] = deadline
    name = submit(kube_jobs, manifest)
    failed = wait_condition(kube_jobs, name, "Failed")
    conditions = {c["type"]: c for c in failed["conditions"]}
    assert conditions["Failed"]["reason"] == "DeadlineExceeded"
    # It did run (training until deleted, were it not for the deadline): conditions keep one entry
    # per type, so the Running one is still there, now False.
    running = conditions["Running"]
    assert (running["status"], running["message"]) == ("False", "Running at 1 replicas.")
    started, ended = (time.mktime(time.strptime(failed[k], "%Y-%m-%dT%H:%M:%SZ"))
                      for k in ("startTime", "completionTime"))
    # Whole seconds; the next look is due at the deadline, not a poll later.
    assert deadline - 1 <= ended - started <= deadline + 15
    assert job_containers(kube_jobs, name) == []
