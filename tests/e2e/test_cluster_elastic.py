"""Elastic training on the test cluster (tests/e2e/cluster.py): several engines, as on several
hosts, one Sageport node each, each declaring one GPU. An elastic HyperPodPyTorchJob of up to
three one-GPU replicas (at least two) is larger than any node, so its world spans the three
nodes, joined by the job's overlay network; it runs AWS's real `hyperpod-elastic-agent` and
examples/elastic-training/train.py (torch DDP, gloo, CPU) in its replicas, as in
tests/e2e/test_elastic_training.py: the ranks reach each other by pod name (rank 0's is
`master_addr`) across engines.

When the host of one of its nodes is lost, HyperPod treats it as a fault of the pods it held and,
with auto-resume, runs the job again on healthy nodes (the HyperPod developer guide, "Automatic
node recovery and auto-resume"; the training operator guide's `jobMaxRetryCount` bounds the
restarts). The job's status says so as the CRD does: a `Restarting` condition with reason
`Fault`, `latestFaultyPodInstanceList` with restartType `JLR` (a pod on a lost node cannot be
restarted in place) and the lost node in faultyInstanceIdList. With no spare node for the lost
pod, the elastic job waits `faultyScaleDownTimeoutInSeconds` and goes on at the largest allowed
size the surviving nodes hold (condition `Running`, reason `Resized`); when the node returns (as
HyperPod replaces a node) it grows back, no sooner than `scalingTimeoutInSeconds` after that
resize, through a graceful stop: every rank saves a DCP checkpoint and the larger world resumes
from it (condition `Restarting` reason `Resize`, then `Running` at the larger size).

The test loses rank 0's node, the job's owner (the node whose worker runs its steps), so that
a surviving node takes the job over. It prints the time from the loss of the host to the job
Running at two replicas (SAGEPORT_NODE_LOST_AFTER_SECONDS, 20 s in the tests, before the node is
declared lost, the faulty scale-down timeout, then the two pods created again and their agents
starting) and from the host's return to the job Running at three again (the node's worker booted
and registered, its engine back in the swarm, then the resize).

A job whose every node is lost (one replica, on one node) keeps no world to go on with: it is
placed again, whole, on a live node (`restartCount` 1, the same `Fault` status naming the node),
and trains on there; the time from the loss to Running elsewhere is printed.

Every node mounts one shared directory at `<data>/volumes` (tests/e2e/cluster.py), as HyperPod's
nodes mount FSx: the job's persistentVolumeClaim holds every rank's records and the checkpoint of
the resize, which a world whose ranks run on other nodes loads."""
import time
import uuid
from pathlib import Path

import kubernetes
import pytest
from kubernetes import client as kube

from bench.elastic import manifest
from tests.conftest import read_env_file
from tests.e2e.conftest import unique_name
from tests.e2e.hosting import wait_until
from tests.e2e.test_elastic_training import (
    GROUP,
    NAMESPACE,
    PLURAL,
    VERSION,
    records,
    replicas_running,
    world_sizes,
)

pytest_plugins = ["tests.e2e.cluster"]
pytestmark = pytest.mark.cluster

# A world start imports torch in the replica, on two cores that also run three nodes.
PHASE_TIMEOUT = 240.0
ELASTIC = {"minReplicas": 2, "maxReplicas": 3, "replicaIncrementStep": 1,
           # Short: the test sees the job go on smaller, then grow back once the node returns.
           "faultyScaleDownTimeoutInSeconds": 5, "scalingTimeoutInSeconds": 10,
           "gracefulShutdownTimeoutInSeconds": 90}


@pytest.fixture(scope="module")
def cluster_images(pytorch_elastic_image):
    return (pytorch_elastic_image,)


@pytest.fixture(scope="module")
def kube_jobs(cluster):
    kubeconfig = read_env_file(cluster.stack.data_dir / "env")["KUBECONFIG"]
    return kube.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=kubeconfig))


def status_of(api, name: str) -> dict:
    return api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name).get("status", {})


def claim_directory(cluster, claim: str) -> Path:
    """A persistentVolumeClaim is a directory of `<data>/volumes` (elastic/replicas.py), the
    file system every node of the test cluster mounts there."""
    return cluster.claims / cluster.stack.account_id / NAMESPACE / claim


def pod_nodes(cluster, arn: str, lost: str = "") -> dict[str, str]:
    """The running pods of the job (their `sageport.host` label) → their nodes, but a lost node's
    (its engine still runs what it ran, out of reach)."""
    return {c.labels["sageport.host"]: c.engine_node for c in cluster.containers(arn)
            if c.status == "running" and c.engine_node != lost}


def running_at(api, name: str, size: int, restarts: int):
    """The job's status once it runs a world of `size` after at least `restarts` restarts."""
    def probe():
        status = status_of(api, name)
        return replicas_running(status) == size and status.get("restartCount", 0) >= restarts and status
    return probe


def wait_trained(claim_dir: Path, size: int, what: str) -> None:
    """Until a world of `size` trains a step from now on: its ranks met across the nodes."""
    since = time.time()
    wait_until(lambda: any(e.get("samples") is not None and e["world_size"] == size and e["time"] >= since
                           for e in records(claim_dir)), timeout=PHASE_TIMEOUT, what=what)


def test_an_elastic_job_spanning_nodes_goes_on_smaller_when_a_node_is_lost_and_grows_back_when_it_returns(
    cluster, kube_jobs, pytorch_elastic_image
):
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    claim_dir = claim_directory(cluster, claim)
    # Checkpoints only when a resize stops the world gracefully.
    job = manifest(unique_name("span"), claim, 3, "low", ELASTIC, image=pytorch_elastic_image, retries=3,
                   CHECKPOINT_EVERY="1000000")
    name = job["metadata"]["name"]
    pods = [f"{name}-pods-{index}" for index in range(3)]
    kube_jobs.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, job)
    uid = kube_jobs.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)["metadata"]["uid"]
    arn = f"arn:aws:sagemaker:{cluster.stack.region}:{cluster.stack.account_id}:hyperpod-pytorch-job/{uid}"
    wait_until(running_at(kube_jobs, name, 3, 0), timeout=PHASE_TIMEOUT, what=f"{name} Running at 3")
    placed = pod_nodes(cluster, arn)
    assert sorted(placed) == pods and len(set(placed.values())) == 3, placed  # one per node: one GPU each
    wait_trained(claim_dir, 3, "a step of the world of 3 trained (DDP over the overlay)")

    # Rank 0's node, the job's owner, is lost; no node is spare: the world restarts at 2.
    lost = placed[pods[0]]
    lost_at = time.monotonic()
    cluster.lose(lost)
    shrunk = wait_until(running_at(kube_jobs, name, 2, 1), timeout=PHASE_TIMEOUT, what=f"{name} Running at 2")
    to_smaller = time.monotonic() - lost_at
    survivors = set(placed.values()) - {lost}
    assert set(pod_nodes(cluster, arn, lost=lost).values()) == survivors
    assert [pod["name"] for pod in shrunk["jobPods"]] == pods[:2]
    assert shrunk["elasticScalingStatus"]["targetReplicas"] == {"pods": 2}
    assert shrunk["latestFaultyPodInstanceList"] == {"restartType": "JLR", "faultyPodList": [pods[0]],
                                                     "faultyRankList": ["0"], "faultyInstanceIdList": [lost]}
    conditions = {c["type"]: c for c in shrunk["conditions"]}
    assert conditions["Restarting"]["reason"] == "Fault" and lost in conditions["Restarting"]["message"]
    assert conditions["Running"]["reason"] == "Resized"
    print(f"\nnode {lost} lost → {name} Running at 2 on {', '.join(sorted(survivors))}: {to_smaller:.1f} s")
    wait_trained(claim_dir, 2, "a step of the world of 2 trained on the surviving nodes")

    # The node returns: the job grows back to 3, one replica per node again.
    back_at = time.monotonic()
    cluster.revive(cluster.node(lost))
    grown = wait_until(running_at(kube_jobs, name, 3, 2), timeout=PHASE_TIMEOUT, what=f"{name} at 3 again")
    to_grown = time.monotonic() - back_at
    assert sorted(pod_nodes(cluster, arn).values()) == sorted(placed.values())
    assert grown["elasticScalingStatus"]["targetReplicas"] == {"pods": 3}
    conditions = {c["type"]: c for c in grown["conditions"]}
    assert (conditions["Restarting"]["reason"], conditions["Running"]["reason"]) == ("Resize", "Resized")
    print(f"\nnode {lost} back → {name} Running at 3 again: {to_grown:.1f} s")
    wait_trained(claim_dir, 3, "a step of the regrown world of 3, from the resize's checkpoint")

    kube_jobs.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    wait_until(lambda: not pod_nodes(cluster, arn), timeout=60, what=f"{name}'s pods removed")
    entries = records(claim_dir)
    assert world_sizes(entries)[:3] == [3, 2, 3]
    regrown = [e for e in entries if e.get("event") == "started" and e["world_size"] == 3 and e["checkpoint"]]
    assert {e["rank"] for e in regrown} == {0, 1, 2}  # every rank loaded the resize's checkpoint


def test_a_job_whose_every_node_is_lost_moves_whole_to_another_node_and_goes_on(
    cluster, kube_jobs, pytorch_elastic_image
):
    # One replica: its node is all the job has. HyperPod's auto-resume runs such a job again on a
    # healthy node; with no survivor to keep its world, Sageport places it again like a new job.
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    claim_dir = claim_directory(cluster, claim)
    job = manifest(unique_name("move"), claim, 1, "low", image=pytorch_elastic_image, retries=2,
                   CHECKPOINT_EVERY="1000000")
    name = job["metadata"]["name"]
    pod = f"{name}-pods-0"
    kube_jobs.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, job)
    uid = kube_jobs.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)["metadata"]["uid"]
    arn = f"arn:aws:sagemaker:{cluster.stack.region}:{cluster.stack.account_id}:hyperpod-pytorch-job/{uid}"
    wait_until(running_at(kube_jobs, name, 1, 0), timeout=PHASE_TIMEOUT, what=f"{name} Running")
    (lost,) = pod_nodes(cluster, arn).values()
    wait_trained(claim_dir, 1, "a step trained on the job's first node")

    lost_at = time.monotonic()
    cluster.lose(lost)
    moved = wait_until(running_at(kube_jobs, name, 1, 1), timeout=PHASE_TIMEOUT,
                       what=f"{name} Running elsewhere")
    to_moved = time.monotonic() - lost_at
    (now_on,) = pod_nodes(cluster, arn, lost=lost).values()
    assert now_on != lost
    assert moved["restartCount"] == 1
    assert moved["latestFaultyPodInstanceList"] == {"restartType": "JLR", "faultyPodList": [pod],
                                                    "faultyRankList": ["0"], "faultyInstanceIdList": [lost]}
    conditions = {c["type"]: c for c in moved["conditions"]}
    assert conditions["Restarting"]["reason"] == "Fault" and lost in conditions["Restarting"]["message"]
    print(f"\nnode {lost} lost with all of {name} → Running on {now_on}: {to_moved:.1f} s")
    wait_trained(claim_dir, 1, "a step trained on the node the job moved to")

    kube_jobs.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    wait_until(lambda: not pod_nodes(cluster, arn, lost=lost), timeout=60, what=f"{name}'s pod removed")
