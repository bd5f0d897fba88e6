"""Two nodes on one machine: the session's worker is node A (127.0.0.1), and `manage.py runnode`
started here is node B, with a data directory of its own and its own address, on a veth pair
this test creates. Both share the one Docker engine; the `sageport.node` label keeps each to its
own containers.

The scheduler places a job that only node B can hold there; an endpoint of two instances gets
one container on each node and answers InvokeEndpoint from both through the router (node B's at
B's address); node B is then killed (its runnode process, by pid): its job fails as a lost node's
job does, its serving container is replaced on node A while the endpoint keeps serving; node B
started again removes the serving container it no longer holds."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import docker
import pytest
from django.conf import settings

from devstack.stack import ServiceSpec, _celery_answers
from tests.conftest import WORKER_ENV, _manage
from tests.e2e.conftest import LOST_FAST, shell_job, unique_name, wait_for_status
from tests.e2e.hosting import NO_RETRIES, wait_for_endpoint, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]

NODE_A, NODE_B = settings.SAGEPORT_NODE_NAME, "two-nodes-b"
EIGHT_GPUS = "ml.p3.16xlarge"  # node A declares four GPUs (tests/settings.py), node B eight


@pytest.fixture(scope="module")
def node_b_address():
    """An address of this host that the test created: one end of a veth pair (removed after)."""
    suffix = uuid.uuid4().hex[:6]
    link, peer = f"sgpb{suffix}", f"sgpp{suffix}"
    address = f"10.213.{int(suffix[:2], 16)}.2"
    steps = [
        ["ip", "link", "add", link, "type", "veth", "peer", "name", peer],
        ["ip", "addr", "add", f"{address}/32", "dev", link],
        ["ip", "link", "set", link, "up"],
        ["ip", "link", "set", peer, "up"],
    ]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True, timeout=30)
        yield address
    finally:
        subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)  # its peer goes too


class NodeB:
    """`manage.py runnode` for node B (or another `name`), a child of the session's supervisor."""

    def __init__(
        self, stack, address: str, data_dir: Path, name: str = NODE_B, gpus: str = "0,1,2,3,4,5,6,7",
        env: dict[str, str] | None = None,
    ):
        self.supervisor, self.address, self.name = stack.supervisor, address, name
        env = {
            **WORKER_ENV,  # what the session's worker (node A) runs with
            "DATABASE_URL": f"sqlite:///{Path(settings.DATA_DIR) / 'sageport.sqlite3'}",
            "SAGEPORT_API_URL": stack.endpoint_url,
            "SAGEPORT_S3_SECRET_ACCESS_KEY": settings.SAGEPORT_S3_SECRET_ACCESS_KEY,  # the installation's
            "SAGEPORT_STACK_ID": settings.SAGEPORT_STACK_ID,  # the test session cleans up by it
            "SAGEPORT_DATA_DIR": str(data_dir),
            "SAGEPORT_NODE_NAME": name,
            "SAGEPORT_NODE_ADDRESS": address,
            "SAGEPORT_NODE_GPUS": gpus,
            **(env or {}),
        }
        self.worker = worker = f"sageport-worker-{name}@{os.uname().nodename}"
        self.spec = ServiceSpec(
            name=f"runnode-{name}",
            argv=[sys.executable, "manage.py", "runnode"],
            env=env,
            ready=lambda: _celery_answers(worker),
            stop_timeout=40.0,
        )
        self.running = False

    def start(self) -> None:
        self.supervisor.start(self.spec)
        self.running = True

    def kill(self) -> None:
        """SIGKILL the runnode process, as a machine that disappears: its worker and the worker's
        pool die with it, its heartbeats stop, its containers stay."""
        assert self.worker_processes(), "node B's worker is not running"
        self.running = False
        self.supervisor.kill(self.spec.name)
        wait_until(lambda: not self.worker_processes(), timeout=30, what="node B's worker to die")

    def worker_processes(self) -> list[int]:
        """The pids of node B's Celery worker and its pool (forked: the same command line)."""
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                command = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            except OSError:  # it ended meanwhile
                continue
            if self.worker.encode() in command:
                pids.append(int(entry.name))
        return pids


@pytest.fixture(scope="module")
def node_b(stack, node_b_address, tmp_path_factory):
    node = NodeB(stack, node_b_address, tmp_path_factory.mktemp("node-b"), env=LOST_FAST)
    node.start()
    yield node
    if node.running:
        node.supervisor.stop(node.spec.name)
    _manage("shell", "-c", f"from capacity.models import Node; Node.objects.filter(name='{NODE_B}').delete()")


def containers_of(arn: str) -> list:
    selector = {"label": f"sageport.resource={arn}"}
    return docker.from_env().containers.list(all=True, filters=selector, ignore_removed=True)


def published_on(container) -> str:
    (binding,) = container.attrs["NetworkSettings"]["Ports"]["8080/tcp"]
    return binding["HostIp"]


def hostnames_answering(runtime, name: str, attempts: int = 40) -> set[str]:
    """Which containers answer, over a bounded number of invocations (each is routed to the
    least busy container, ties broken at random)."""
    seen = set()
    for _ in range(attempts):
        response = runtime.invoke_endpoint(EndpointName=name, Body=b"{}", ContentType="application/json")
        seen.add(json.loads(response["Body"].read())["hostname"])
    return seen


def test_work_is_placed_on_both_nodes_and_fails_over_when_node_b_is_lost(
    stack, sagemaker, bucket, shell_algo_image, probe_image, hosting, node_b
):
    runtime = stack.client("sagemaker-runtime", config=NO_RETRIES)
    # A job only node B can hold (eight GPUs), running until node B is lost.
    job = unique_name("on-b")
    request = shell_job(job, shell_algo_image, bucket, "sleep 120",
                        ResourceConfig={"InstanceType": EIGHT_GPUS, "InstanceCount": 1, "VolumeSizeInGB": 10})
    sagemaker.create_training_job(**request)
    job_arn = sagemaker.describe_training_job(TrainingJobName=job)["TrainingJobArn"]
    # An endpoint of two instances: one container on each node.
    endpoint = hosting.probe_endpoint(probe_image, count=2)
    endpoint_arn = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointArn"]

    (training,) = wait_until(lambda: [c for c in containers_of(job_arn) if c.status == "running"],
                             what="the job's container")
    assert training.labels["sageport.node"] == NODE_B
    serving = {c.labels["sageport.node"]: c for c in containers_of(endpoint_arn)}
    assert sorted(serving) == sorted([NODE_A, NODE_B])
    assert published_on(serving[NODE_A]) == "127.0.0.1"
    assert published_on(serving[NODE_B]) == node_b.address  # the router reaches it there
    hostnames = {node: container.attrs["Config"]["Hostname"] for node, container in serving.items()}
    assert hostnames_answering(runtime, endpoint) == set(hostnames.values())

    node_b.kill()

    failed = wait_for_status(sagemaker, job, timeout=90)
    assert failed["TrainingJobStatus"] == "Failed"
    assert failed["FailureReason"] == (
        f"InternalServerError: the node {NODE_B} that ran it stopped sending heartbeats."
    )
    # Node B's container runs on (nobody can stop it while B is away); the rows say where traffic goes.
    wait_until(lambda: _serving_nodes(endpoint_arn, running_only=True) == [NODE_A, NODE_A, NODE_B],
               timeout=60, what="a replacement on node A")
    wait_for_endpoint(sagemaker, endpoint)
    answering = wait_until(lambda: _answering_only_on_a(runtime, endpoint, hostnames[NODE_B]),
                           timeout=30, what="the router to drop node B's container")
    assert hostnames[NODE_B] not in answering and len(answering) == 2

    # Node B comes back: it removes the serving container whose row went while it was lost.
    lost_container = serving[NODE_B].name
    node_b.start()
    wait_until(lambda: lost_container not in [c.name for c in containers_of(endpoint_arn)],
               timeout=30, what="node B to remove the container it no longer holds")
    assert _serving_nodes(endpoint_arn) == [NODE_A, NODE_A]


def _serving_nodes(arn: str, running_only: bool = False) -> list[str]:
    found = containers_of(arn)
    return sorted(c.labels["sageport.node"] for c in found if c.status == "running" or not running_only)


def _answering_only_on_a(runtime, endpoint: str, lost_hostname: str) -> set[str] | None:
    seen = hostnames_answering(runtime, endpoint)
    return seen if lost_hostname not in seen and len(seen) == 2 else None

