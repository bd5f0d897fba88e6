"""Managed tiered checkpointing end to end: AWS's `amzn-sagemaker-checkpointing` library, unchanged,
in the pytorch-tier example image (examples/tiered-checkpointing/train.py: two gloo ranks, a
`dcp.async_save` to memory every step and to S3 every few), run as SageMaker training jobs on the
two nodes of a HyperPod cluster whose TieredStorageConfig enables the tier: the session's node A
and node "tier-b" (`manage.py runnode`), each with its own tier service, one machine.

The jobs of one namespace follow each other; each resumes where the previous left off:
1. steps 1-6: memory keeps the newest three complete steps, S3 gets step 5;
2. resumes from step 6, which only memory has;
3. the node that held the namespace loses its memory and its service: resumes from step 8,
   which only the neighbour's replica has;
4. both nodes lose theirs: resumes from S3 (step 5) and ends with exactly the weights of a run
   that was never interrupted.
Then a zero budget refuses every memory write (the library keeps to S3), and turning the tier off
stops the services and leaves the name out of new containers."""
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
from pathlib import Path

import docker
import pytest
from django.conf import settings

from clusters import tier_network
from devstack.stack import free_port
from tests.conftest import _manage
from tests.e2e.conftest import read_tar_gz, shell_job, training_request, unique_name, wait_for_status
from tests.e2e.hosting import wait_until
from tests.e2e.test_two_nodes import NODE_A, NodeB, node_b_address  # noqa: F401 (a fixture)

NODE_B = "tier-b"
NODE_TYPE = "ml.g5.12xlarge"  # what both nodes declare (tests/settings.py)
ROLE = "arn:aws:iam::123456789012:role/HyperPodRole"
JOB_TIMEOUT_SECONDS = 240
S3_EVERY = "5"
GROUP = {"InstanceGroupName": "workers", "InstanceType": NODE_TYPE, "InstanceCount": 2, "ExecutionRole": ROLE}


class TierNode:
    """One node's tier service as the test sees it: its peer listener (the installation's token),
    its process (by the pid file its worker writes) and its memory directory."""

    def __init__(self, name: str, address: str, peer_port: int, data_dir: Path):
        self.name, self.address, self.peer_port = name, address, peer_port
        self.files_dir = data_dir / "tier" / name
        memory_name = f"sageport-tier-{settings.SAGEPORT_STACK_ID}-{name}"
        self.memory_dir = Path(settings.SAGEPORT_TIER_MEMORY_DIR) / memory_name

    def request(self, method: str, path: str, account: str, body: bytes = b"", headers=None):
        """(status, body); status 0 when nothing answers."""
        connection = http.client.HTTPConnection(self.address, self.peer_port, timeout=10)
        try:
            connection.request(method, path, body=body, headers={
                "X-Sageport-Tier-Token": _peer_token(), "X-Sageport-Tier-Account": account, **(headers or {}),
            })
            response = connection.getresponse()
            return response.status, response.read()
        except OSError:
            return 0, b""
        finally:
            connection.close()

    def latest(self, namespace: str, account: str) -> list[int]:
        """The complete steps this node's own store holds (a peer asks nobody else)."""
        status, body = self.request("GET", f"/v1/cp/checkpoints/{namespace}/latest?limit=10", account)
        return sorted(int(step) for step in json.loads(body)) if status == 200 else []

    def answers(self, account: str) -> bool:
        return self.request("GET", "/health", account)[0] == 200

    def pid(self) -> int | None:
        try:
            pid = int((self.files_dir / "service.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None
        return pid if Path(f"/proc/{pid}").exists() else None

    def lose_memory(self, account: str) -> None:
        """As a node that fails: its checkpoints and its service are gone; its worker starts a new,
        empty service."""
        old = self.pid()
        shutil.rmtree(self.memory_dir, ignore_errors=True)
        if old:
            os.kill(old, signal.SIGKILL)
        wait_until(lambda: self.pid() not in (None, old) and self.answers(account), timeout=60,
                   what=f"{self.name}'s new tier service")


def _peer_token() -> str:
    secret = settings.SAGEPORT_S3_SECRET_ACCESS_KEY.encode()
    return hmac.new(secret, b"sageport checkpoint tier peers", hashlib.sha256).hexdigest()


@pytest.fixture(scope="module")
def tier_b(stack, node_b_address, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    data_dir = tmp_path_factory.mktemp("tier-b")
    peer_port = free_port()
    node = NodeB(stack, node_b_address, data_dir, name=NODE_B, gpus="0,1,2,3",
                 env={"SAGEPORT_TIER_PEER_PORT": str(peer_port)})
    node.start()
    yield TierNode(NODE_B, node_b_address, peer_port, data_dir)
    node.supervisor.stop(node.spec.name)
    _manage("shell", "-c", f"from capacity.models import Node; Node.objects.filter(name={NODE_B!r}).delete()")


@pytest.fixture(scope="module")
def tier_a(stack):
    return TierNode(NODE_A, "127.0.0.1", settings.SAGEPORT_TIER_PEER_PORT, Path(settings.DATA_DIR))


@pytest.fixture(scope="module")
def cluster(sagemaker, stack, tier_a, tier_b):
    """A cluster of both nodes with the tier on; deleted afterwards (which turns it off)."""
    name = unique_name("tier")
    sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[GROUP],
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 10},
    )
    wait_until(lambda: sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService",
               timeout=60, what="the cluster in service")
    for node in (tier_a, tier_b):
        wait_until(lambda node=node: node.answers(stack.account_id), timeout=60,
                   what=f"{node.name}'s tier service")
    yield name
    sagemaker.delete_cluster(ClusterName=name)
    wait_until(lambda: name not in _cluster_names(sagemaker), timeout=60, what="the cluster deleted")


def _cluster_names(sagemaker) -> list[str]:
    return [summary["ClusterName"] for summary in sagemaker.list_clusters()["ClusterSummaries"]]


def run_example(sagemaker, s3, bucket, image: str, hyperparameters: dict) -> tuple[dict, dict, str]:
    """A training job of the example: its checkpointing.json, its output.tar.gz members and the
    node it ran on."""
    name = start_example(sagemaker, bucket, image, hyperparameters)
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    node = wait_until(lambda: _node_of(arn), timeout=120, what="the job's container")
    return (*finish_example(sagemaker, s3, bucket, name), node)


def start_example(sagemaker, bucket, image: str, hyperparameters: dict) -> str:
    """A training job of the example, created: its name."""
    name = unique_name("tier-job")
    sagemaker.create_training_job(**training_request(name, image, bucket, HyperParameters=hyperparameters))
    return name


def finish_example(sagemaker, s3, bucket, name: str) -> tuple[dict, dict]:
    """The job's checkpointing.json and output.tar.gz members, once it has completed."""
    job = wait_for_status(sagemaker, name, timeout=JOB_TIMEOUT_SECONDS)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    output = read_tar_gz(s3, bucket, f"output/{name}/output/output.tar.gz")
    return json.loads(model["checkpointing.json"]), output


def _node_of(arn: str) -> str | None:
    selector = {"label": f"sageport.resource={arn}"}
    found = docker.from_env().containers.list(all=True, filters=selector, ignore_removed=True)
    return found[0].labels["sageport.node"] if found else None


def test_checkpoints_resume_from_memory_from_the_neighbours_replica_and_from_s3(
    sagemaker, s3, bucket, stack, pytorch_tier_image, cluster, tier_a, tier_b
):
    namespace, account = unique_name("ns").replace("-", "_"), stack.account_id
    nodes = {tier_a.name: tier_a, tier_b.name: tier_b}
    common = {"namespace": namespace, "s3_base_path": f"s3://{bucket}/tiered", "s3_every": S3_EVERY}

    first, output, ran_on = run_example(sagemaker, s3, bucket, pytorch_tier_image, {**common, "steps": "6"})
    log = output[f"sagemaker_checkpointing/algo-1/{namespace}_checkpointing.log"].decode()
    assert (first["resumed_from_step"], first["last_step"], first["failed_steps"]) == (None, 6, []), log
    assert first["s3_steps"] == [5]
    # The namespace's newest three complete steps, on the node that ran the job and on its replica.
    for node in nodes.values():
        assert wait_until(lambda node=node: node.latest(namespace, account) == [4, 5, 6], timeout=30,
                          what=f"steps 4-6 on {node.name}")
    # The library's own log, kept by Sageport beside the job's output data.
    assert "In-memory write completed" in log

    second, _, ran_on = run_example(sagemaker, s3, bucket, pytorch_tier_image, {**common, "steps": "8"})
    assert (second["resumed_from_step"], second["last_step"]) == (6, 8)  # step 6 was never in S3

    holder = nodes[ran_on]
    neighbour = next(node for name, node in nodes.items() if name != ran_on)
    wait_until(lambda: 8 in neighbour.latest(namespace, account), timeout=30, what="step 8 replicated")
    holder.lose_memory(account)
    # No check that the holder is empty now: the tier's repair sweep may already have copied step 8
    # back to it from the neighbour (seen in CI). Either way step 8 outlived the holder's memory
    # only through the neighbour's replica, and the next run resumes from it.
    third, _, _ = run_example(sagemaker, s3, bucket, pytorch_tier_image, {**common, "steps": "9"})
    assert third["resumed_from_step"] == 8

    def forgotten_everywhere():
        # the tier's repair sweep copies a shard only one node holds back to its neighbour, so a
        # node wiped first may get the other's copy back before that one is wiped: wipe both until
        # neither holds the namespace
        for node in nodes.values():
            node.lose_memory(account)
        return all(node.latest(namespace, account) == [] for node in nodes.values())

    assert wait_until(forgotten_everywhere, timeout=30, what="no node holding the namespace")
    # The uninterrupted run, in a namespace of its own, trains meanwhile: no node is wiped again.
    fourth = start_example(sagemaker, bucket, pytorch_tier_image, {**common, "steps": "12"})
    straight = start_example(
        sagemaker, bucket, pytorch_tier_image, {"namespace": namespace + "_straight", "steps": "12"}
    )
    fourth, _ = finish_example(sagemaker, s3, bucket, fourth)
    assert fourth["resumed_from_step"] == 5  # S3's only step
    straight, _ = finish_example(sagemaker, s3, bucket, straight)
    assert straight["resumed_from_step"] is None
    assert fourth["weights_sha256"] == straight["weights_sha256"]


def test_a_corrupted_shard_is_refused(stack, cluster, tier_a):
    body = b"weights"
    wrong = json.dumps({"checksum": "AAAAAAAAAAAAAAAAAAAAAA==", "algorithm": "xxh3_128"})
    namespace = "/v1/cp/namespaces/corrupt?num_ranks=2&steps_retained=3"
    status, _ = tier_a.request("POST", namespace, stack.account_id)
    assert status in (200, 201)
    status, answer = tier_a.request("POST", "/v1/cp/checkpoints/corrupt/0/1", stack.account_id, body=body,
                                    headers={"Shard-Meta": wrong, "Content-Length": str(len(body))})
    assert status == 400, answer
    assert tier_a.request("GET", "/v1/cp/checkpoints/corrupt/0/1", stack.account_id)[0] == 404


def test_a_budget_of_nothing_refuses_memory_writes_and_the_library_keeps_to_s3(
    sagemaker, s3, bucket, stack, pytorch_tier_image, cluster, tier_a, tier_b
):
    _set_tier(sagemaker, cluster, {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 0})
    for node in (tier_a, tier_b):
        wait_until(lambda node=node: _budget(node) == 0, timeout=30, what=f"{node.name}'s new budget")
    namespace = unique_name("nobudget").replace("-", "_")
    hyperparameters = {
        "namespace": namespace, "steps": "3", "s3_base_path": f"s3://{bucket}/tiered", "s3_every": "1",
    }
    summary, _, _ = run_example(sagemaker, s3, bucket, pytorch_tier_image, hyperparameters)
    assert (summary["s3_steps"], summary["failed_steps"]) == ([1, 2, 3], [])
    assert tier_a.latest(namespace, stack.account_id) == [] == tier_b.latest(namespace, stack.account_id)


def _set_tier(sagemaker, cluster: str, tiered_storage: dict) -> None:
    sagemaker.update_cluster(ClusterName=cluster, InstanceGroups=[GROUP], TieredStorageConfig=tiered_storage)


def _budget(node: TierNode) -> int | None:
    try:
        return json.loads((node.files_dir / "config.json").read_text())["budget_bytes"]
    except (FileNotFoundError, ValueError):
        return None


def test_turning_the_tier_off_stops_the_services_and_new_containers_no_longer_find_it(
    sagemaker, s3, bucket, stack, shell_algo_image, cluster, tier_a, tier_b
):
    _set_tier(sagemaker, cluster, {"Mode": "Disable"})
    for node in (tier_a, tier_b):
        wait_until(lambda node=node: node.pid() is None and not node.memory_dir.exists(), timeout=60,
                   what=f"{node.name}'s tier service stopped and its memory freed")
        assert not node.answers(stack.account_id)
    name = unique_name("notier")
    script = "cat /etc/hosts > /opt/ml/model/hosts"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))
    job = wait_for_status(sagemaker, name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    hosts = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")["hosts"].decode()
    assert tier_network.SERVICE_NAME not in hosts
