"""Elastic training on the test cluster (tests/e2e/cluster.py): several engines, as on several
hosts, one Sageport node each. A HyperPodPyTorchJob runs AWS's real `hyperpod-elastic-agent` and
examples/elastic-training/train.py (torch, gloo, CPU) in its replica, as in
tests/e2e/test_elastic_training.py.

When the host of a job's node is lost, HyperPod treats it as a fault of the pods it held and,
with auto-resume, runs the job again on healthy nodes from its last checkpoint (the HyperPod
developer guide, "Automatic node recovery and auto-resume"; the training operator guide's
`jobMaxRetryCount` bounds the restarts). The job's status says so as the CRD does: a
`Restarting` condition with reason `Fault`, `latestFaultyPodInstanceList` with restartType `JLR`
(a pod on a lost node cannot be restarted in place) and the lost node in faultyInstanceIdList.
The test prints the time from the loss of the host to the job Running again (and to its first
step trained there): mostly SAGEPORT_NODE_LOST_AFTER_SECONDS (20 s in the tests) before the node
is declared lost, then a new pod's agent starting."""
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


def running_on(cluster, arn: str) -> set[str]:
    """The nodes whose engines run a container of the job."""
    return {c.engine_node for c in cluster.containers(arn) if c.status == "running"}


def claim_directory(cluster, node: str, claim: str) -> Path:
    """A persistentVolumeClaim is a directory of the node's data dir (elastic/replicas.py)."""
    return cluster.stack.data_dir / "nodes" / node / "volumes" / cluster.stack.account_id / NAMESPACE / claim


def trained_after(claim_dir: Path, restart: int) -> bool:
    return any("samples" in entry and entry["restart"] == restart for entry in records(claim_dir))


def test_a_lost_nodes_elastic_job_runs_again_on_another_node(cluster, kube_jobs, pytorch_elastic_image):
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    job = manifest(unique_name("moved"), claim, 1, "low", image=pytorch_elastic_image, retries=3)
    name = job["metadata"]["name"]
    kube_jobs.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, job)
    uid = kube_jobs.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)["metadata"]["uid"]
    arn = f"arn:aws:sagemaker:{cluster.stack.region}:{cluster.stack.account_id}:hyperpod-pytorch-job/{uid}"
    wait_until(lambda: condition(status_of(kube_jobs, name)) == "Running", timeout=PHASE_TIMEOUT,
               what=f"{name} Running")
    (first,) = running_on(cluster, arn)
    wait_until(lambda: trained_after(claim_directory(cluster, first, claim), 0), timeout=PHASE_TIMEOUT,
               what="a step trained on the first node")

    lost_at = time.monotonic()
    cluster.lose(first)

    def running_elsewhere() -> bool:
        status = status_of(kube_jobs, name)
        return condition(status) == "Running" and status.get("restartCount", 0) >= 1
    wait_until(running_elsewhere, timeout=PHASE_TIMEOUT, what=f"{name} Running again")
    to_running = time.monotonic() - lost_at
    status = status_of(kube_jobs, name)
    (second,) = running_on(cluster, arn) - {first}
    wait_until(lambda: trained_after(claim_directory(cluster, second, claim), 1), timeout=PHASE_TIMEOUT,
               what=f"a step trained on {second}")
    to_step = time.monotonic() - lost_at
    print(f"\nnode {first} lost → {name} Running on {second}: {to_running:.1f} s, "
          f"its first step there: {to_step:.1f} s")

    assert status["latestFaultyPodInstanceList"] == {
        "restartType": "JLR", "faultyPodList": [f"{name}-pods-0"], "faultyRankList": ["0"],
        "faultyInstanceIdList": [first]}
    restarting = next(c for c in status["conditions"] if c["type"] == "Restarting")
    assert restarting["reason"] == "Fault" and first in restarting["message"]
    kube_jobs.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    wait_until(lambda: not running_on(cluster, arn) - {first}, timeout=60, what=f"{name}'s pods removed")

