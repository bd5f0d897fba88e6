"""Algorithm and model containers run least-privileged, as the Docker engine itself reports them:
Docker's default capabilities cut down to the documented set, no-new-privileges, a PIDs limit,
never privileged, no host network, no Docker socket, and still root inside (SageMaker's contract)."""
import time

import docker
import pytest
from django.conf import settings

from runtime.docker import CAPABILITIES_KEPT
from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

pytest_plugins = ["tests.e2e.hosting_fixtures"]

# Reports what the algorithm holds from the inside, then trains until it is stopped.
REPORTS_ITS_PRIVILEGES = """
grep -E '^(CapEff|NoNewPrivs):' /proc/self/status > /opt/ml/model/status
id -u > /opt/ml/model/uid
echo ready > /opt/ml/model/ready
while true; do sleep 0.2; done
"""
# Bits of CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7, NET_BIND_SERVICE 10.
KEPT_CAPABILITY_MASK = "00000000000004fb"


@pytest.fixture(scope="module")
def engine():
    client = docker.from_env()
    yield client
    client.close()


def container_of(engine, resource_arn: str, timeout: float = 60.0):
    """The running container labelled with `resource_arn` (bounded wait)."""
    deadline = time.monotonic() + timeout
    while True:
        found = engine.containers.list(filters={"label": f"sageport.resource={resource_arn}"})
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no running container for {resource_arn}"
        time.sleep(0.3)


def wait_until_ready(container, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while container.exec_run(["test", "-e", "/opt/ml/model/ready"]).exit_code != 0:
        assert time.monotonic() < deadline, "the algorithm never wrote its report"
        time.sleep(0.2)


def assert_least_privileged(container) -> None:
    host_config = container.attrs["HostConfig"]
    assert host_config["CapDrop"] == ["ALL"]
    assert sorted(host_config["CapAdd"]) == sorted(CAPABILITIES_KEPT)
    assert not {"NET_RAW", "MKNOD", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP", "SETPCAP", "SYS_ADMIN"} & set(
        host_config["CapAdd"]
    )
    assert "no-new-privileges:true" in host_config["SecurityOpt"]
    assert host_config["PidsLimit"] == settings.SAGEPORT_CONTAINER_PIDS_LIMIT
    assert host_config["Privileged"] is False
    assert host_config["NetworkMode"] != "host"
    assert host_config["PidMode"] != "host"
    assert host_config["IpcMode"] != "host"
    assert not host_config.get("Devices")
    mounted = [mount["Source"] for mount in container.attrs["Mounts"]]
    assert not [source for source in mounted if "docker.sock" in source], mounted
    assert container.attrs["Config"]["User"] in ("", "root", "0")  # SageMaker runs images as root


def test_training_container_runs_least_privileged(sagemaker, s3, bucket, shell_algo_image, engine):
    name = unique_name("least-privilege")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, REPORTS_ITS_PRIVILEGES))
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]

    container = container_of(engine, arn)
    assert_least_privileged(container)

    wait_until_ready(container)
    sagemaker.stop_training_job(TrainingJobName=name)
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Stopped"
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model["uid"] == b"0\n"
    status = dict(line.split(":\t") for line in model["status"].decode().splitlines())
    assert status == {"CapEff": KEPT_CAPABILITY_MASK, "NoNewPrivs": "1"}


def test_serving_container_runs_least_privileged(sagemaker, probe_image, hosting, engine):
    endpoint = hosting.probe_endpoint(probe_image)
    arn = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointArn"]

    assert_least_privileged(container_of(engine, arn))
