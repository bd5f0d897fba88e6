"""A job of two instances that no single node holds, spread over two nodes on one machine
(SAGEPORT_MULTI_NODE_NETWORK=overlay, which the session's workers run with): the session's worker
is node A (four GPUs), `manage.py runnode` started here is node "span-b" (four GPUs, its own data
directory, as in test_two_nodes.py); each node's worker starts the container of its own instance,
and the two join one Docker Swarm attachable overlay network.

One machine allows a single-node swarm only: both nodes share one engine, so the overlay carries
no VXLAN traffic between hosts here (docs/operations.md says what that leaves untested). The
engine is put in swarm mode for this module if it was not, and left again afterwards."""
import json
import subprocess

import docker
import pytest

from tests.conftest import _manage
from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status
from tests.e2e.hosting import wait_until
from tests.e2e.test_training_distributed import PEER_PROBE
from tests.e2e.test_two_nodes import NODE_A, NodeB, node_b_address  # noqa: F401 (a fixture)

SPAN_NODE = "span-b"
FOUR_GPUS = "ml.p3.8xlarge"  # two of them: eight GPUs, and each node has four
GATEWAY_BRIDGE = "docker_gwbridge"  # the bridge swarm mode creates for overlay containers' way out


def _docker(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def swarm():
    """The engine in swarm mode for this module: a single-node swarm advertised on the loopback
    (no traffic leaves the machine), initialised here only if the engine was not in one already,
    and then left again, with the bridge it created."""
    state = _docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip()
    if state == "active":
        yield
        return
    if state != "inactive":
        pytest.skip(f"the Docker engine's swarm state is {state!r}: not touching it")
    had_bridge = _docker("network", "inspect", GATEWAY_BRIDGE).returncode == 0
    init = _docker("swarm", "init", "--advertise-addr", "127.0.0.1", "--listen-addr", "127.0.0.1:2377")
    if init.returncode != 0:
        pytest.skip(f"a single-node swarm cannot be initialised on this machine: {init.stderr.strip()}")
    try:
        yield
    finally:
        _docker("swarm", "leave", "--force")
        if not had_bridge:
            _docker("network", "rm", GATEWAY_BRIDGE)


@pytest.fixture(scope="module")
def span_node(stack, swarm, node_b_address, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    node = NodeB(stack, node_b_address, tmp_path_factory.mktemp("span-b"), name=SPAN_NODE, gpus="0,1,2,3")
    node.start()
    yield node
    node.supervisor.stop(node.spec.name)
    forget = f"from capacity.models import Node; Node.objects.filter(name={SPAN_NODE!r}).delete()"
    _manage("shell", "-c", forget)


def job_networks(arn: str) -> list:
    return docker.from_env().networks.list(filters={"label": f"sageport.resource={arn}"})


def job_containers(arn: str) -> list:
    selector = {"label": f"sageport.resource={arn}"}
    return docker.from_env().containers.list(all=True, filters=selector, ignore_removed=True)


def test_a_job_no_single_node_holds_runs_on_two_nodes_joined_by_an_overlay_network(
    sagemaker, s3, bucket, shell_algo_image, span_node
):
    for index in range(4):
        s3.put_object(Bucket=bucket, Key=f"shards/part-{index}.csv", Body=f"{index}\n".encode())
    name = unique_name("span")
    request = shell_job(
        name, shell_algo_image, bucket, PEER_PROBE,
        ResourceConfig={"InstanceType": FOUR_GPUS, "InstanceCount": 2, "VolumeSizeInGB": 10},
        InputDataConfig=[{
            "ChannelName": "train",
            "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/shards/",
                "S3DataDistributionType": "ShardedByS3Key",
            }},
        }],
    )
    sagemaker.create_training_job(**request)
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]

    both = wait_until(lambda: (found := job_containers(arn)) and len(found) == 2 and found, timeout=90,
                      what="the containers of both instances")
    by_host = {container.labels["sageport.host"]: container for container in both}
    # Each node's worker started its own instance's container (packing would have put both on
    # one node, had one node had eight GPUs).
    assert sorted(container.labels["sageport.node"] for container in both) == sorted([NODE_A, SPAN_NODE])
    (network,) = job_networks(arn)
    assert (network.attrs["Driver"], network.attrs["Attachable"]) == ("overlay", True)
    for container in by_host.values():
        assert network.name in container.attrs["NetworkSettings"]["Networks"]

    job = wait_for_status(sagemaker, name, timeout=150)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    for host in ("algo-1", "algo-2"):
        config = json.loads(model[f"resourceconfig-{host}.json"])
        assert (config["current_host"], config["hosts"]) == (host, ["algo-1", "algo-2"])
        for peer in ("algo-1", "algo-2"):
            assert model[f"{host}-sees-{peer}"] == b"reachable\n"  # by name, across the two nodes
    # Each node staged its own instance's shard.
    shards = model["files-algo-1"].split() + model["files-algo-2"].split()
    assert sorted(shards) == [f"part-{index}.csv".encode() for index in range(4)]
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert not [key for key in keys if "sageport-instances" in key]  # the nodes' hand-over is gone
    wait_until(lambda: not job_networks(arn) and not job_containers(arn), timeout=30,
               what="the job's overlay network and containers to be removed")
