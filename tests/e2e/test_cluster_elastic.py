"""Elastic training on the test cluster (tests/e2e/cluster.py): several engines, as on several
hosts, one Sageport node each, each declaring one GPU. A HyperPodPyTorchJob of two one-GPU
replicas is larger than any node, so its world spans two nodes, joined by the job's overlay
network; it runs AWS's real `hyperpod-elastic-agent` and examples/elastic-training/train.py
(torch DDP, gloo, CPU) in its replicas, as in tests/e2e/test_elastic_training.py: the ranks
reach each other by pod name (rank 0's is `master_addr`) across engines.

When the host of one of its nodes is lost, HyperPod treats it as a fault of the pods it held and,
with auto-resume, runs the job again on healthy nodes, replacing the faulty node's pods (the
HyperPod developer guide, "Automatic node recovery and auto-resume"; the training operator
guide's `jobMaxRetryCount` bounds the restarts). The job's status says so as the CRD does: a
`Restarting` condition with reason `Fault`, `latestFaultyPodInstanceList` with restartType `JLR`
(a pod on a lost node cannot be restarted in place) and the lost node in faultyInstanceIdList.
The test loses rank 0's node, the job's owner (the node whose worker runs its steps), so that
the surviving node takes the job over and the lost pod is replaced on the third node. It prints
the time from the loss of the host to the job Running again: SAGEPORT_NODE_LOST_AFTER_SECONDS
(20 s in the tests) before the node is declared lost, then both pods created again and their
agents starting.

A persistentVolumeClaim is a directory of each node's data dir (elastic/replicas.py): each rank
writes its records on its own node, and no checkpoint is saved (a DCP checkpoint needs one
directory every rank shares: FSx on HyperPod), so the restarted world trains from the start."""
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import kubernetes
import pytest
from kubernetes import client as kube

from bench.elastic import manifest
from tests.conftest import read_env_file
from tests.e2e.conftest import unique_name
from tests.e2e.hosting import wait_until
from tests.e2e.test_elastic_training import GROUP, NAMESPACE, PLURAL, VERSION, condition, records

pytest_plugins = ["tests.e2e.cluster"]
pytestmark = pytest.mark.cluster

# A world start imports torch in the replica, on two cores that also run three nodes.
PHASE_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def cluster_images(pytorch_elastic_image):
    return (pytorch_elastic_image,)


@pytest.fixture(scope="module")
def kube_jobs(cluster):
    kubeconfig = read_env_file(cluster.stack.data_dir / "env")["KUBECONFIG"]
    return kube.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=kubeconfig))


def status_of(api, name: str) -> dict:
    return api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name).get("status", {})


def claim_directory(cluster, node: str, claim: str) -> Path:
    """A persistentVolumeClaim is a directory of the node's data dir (elastic/replicas.py)."""
    return cluster.stack.data_dir / "nodes" / node / "volumes" / cluster.stack.account_id / NAMESPACE / claim


def trained_after(claim_dir: Path, restart: int, world_size: int) -> bool:
    return any("samples" in entry and entry["restart"] == restart and entry["world_size"] == world_size
               for entry in records(claim_dir))


def pod_nodes(cluster, arn: str, lost: str = "") -> dict[str, str]:
    """The running pods of the job (their `sageport.host` label) → their nodes, but a lost node's
    (its engine still runs what it ran, out of reach)."""
    return {c.labels["sageport.host"]: c.engine_node for c in cluster.containers(arn)
            if c.status == "running" and c.engine_node != lost}


def trained_on(cluster, node: str, claim: str, restart: int) -> Callable[[], bool]:
    return lambda: trained_after(claim_directory(cluster, node, claim), restart, world_size=2)


def test_a_job_larger_than_a_node_spans_nodes_and_runs_again_when_one_is_lost(cluster, kube_jobs,
                                                                               pytorch_elastic_image):
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    # No checkpoint during the test (their directory is not shared between nodes here).
    job = manifest(unique_name("span"), claim, 2, "low", image=pytorch_elastic_image, retries=3,
                   CHECKPOINT_EVERY="1000000")
    name = job["metadata"]["name"]
    kube_jobs.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, job)
    uid = kube_jobs.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)["metadata"]["uid"]
    arn = f"arn:aws:sagemaker:{cluster.stack.region}:{cluster.stack.account_id}:hyperpod-pytorch-job/{uid}"
    wait_until(lambda: condition(status_of(kube_jobs, name)) == "Running", timeout=PHASE_TIMEOUT,
               what=f"{name} Running")
    placed = pod_nodes(cluster, arn)
    assert len(set(placed.values())) == 2, placed  # one replica per node: one GPU each
    first, second = placed[f"{name}-pods-0"], placed[f"{name}-pods-1"]
    # Both ranks train together (DDP over the overlay): each records steps of a world of 2.
    for node in (first, second):
        wait_until(trained_on(cluster, node, claim, 0), timeout=PHASE_TIMEOUT,
                   what=f"a step of the world of 2 trained on {node}")

    lost_at = time.monotonic()
    cluster.lose(first)  # rank 0's node, the job's owner

    def running_again() -> bool:
        status = status_of(kube_jobs, name)
        return condition(status) == "Running" and status.get("restartCount", 0) >= 1
    wait_until(running_again, timeout=PHASE_TIMEOUT, what=f"{name} Running again")
    to_running = time.monotonic() - lost_at
    status = status_of(kube_jobs, name)
    (third,) = {node.name for node in cluster.nodes} - {first, second}
    # The lost pod replaced on the spare node, the survivor's created again (a full job restart),
    # both agents sent /start (Running). Training across nodes was shown before the loss: the new
    # world's first step is not waited for (a minute more on two busy cores).
    assert pod_nodes(cluster, arn, lost=first) == {f"{name}-pods-0": third, f"{name}-pods-1": second}
    assert [pod["name"] for pod in status["jobPods"]] == [f"{name}-pods-0", f"{name}-pods-1"]
    print(f"\nnode {first} lost → {name} Running again on {second} and {third}: {to_running:.1f} s")

    assert status["latestFaultyPodInstanceList"] == {
        "restartType": "JLR", "faultyPodList": [f"{name}-pods-0"], "faultyRankList": ["0"],
        "faultyInstanceIdList": [first]}
    restarting = next(c for c in status["conditions"] if c["type"] == "Restarting")
    assert restarting["reason"] == "Fault" and first in restarting["message"]
    kube_jobs.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    wait_until(lambda: not pod_nodes(cluster, arn, lost=first), timeout=60,
               what=f"{name}'s pods removed from the live nodes")
