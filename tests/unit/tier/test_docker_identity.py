"""The identity lookup against the real engine: a training container on the node's tier network
is known by its address there, and its job runs while the container does. Only the engine is
asked; nothing is sent to the container."""

import uuid

from runtime import labels
from tier.identity import DockerIdentity

JOB = "arn:aws:sagemaker:us-east-1:123456789012:training-job/identity-test"


def test_the_engine_names_the_job_of_a_container_on_the_tier_network(docker_engine, busybox_image):
    name = f"sageport-tier-test-{uuid.uuid4().hex[:8]}"
    network = docker_engine.networks.create(name, internal=True, labels=labels.own())
    container = None
    try:
        container = docker_engine.containers.run(
            # No training role label: the session's training reaper would remove a training
            # container whose job it does not know, under the test.
            busybox_image, ["sleep", "60"], detach=True, network=name,
            labels={**labels.own(), labels.RESOURCE: JOB})
        container.reload()
        address = container.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
        identity = DockerIdentity(name)
        assert identity.job_of(address) == JOB
        assert identity.job_of("127.0.0.1") is None
        assert identity.job_running(JOB)
        container.remove(force=True)
        container = None
        assert not identity.job_running(JOB)
    finally:
        if container is not None:
            container.remove(force=True)
        network.remove()
