"""Containers and networks that no live training job owns are removed by the sweeper."""

import time
import uuid

import docker
from django.conf import settings

from runtime import labels as keys


def test_orphan_training_containers_and_networks_are_removed(stack, busybox_image):
    client = docker.from_env()
    suffix = uuid.uuid4().hex[:8]
    labels = {
        keys.MANAGED: "true",
        keys.ROLE: keys.TRAINING_ROLE,
        keys.STACK: settings.SAGEPORT_STACK_ID,
        keys.RESOURCE: f"arn:aws:sagemaker:us-east-1:123456789012:training-job/gone-{suffix}",
    }
    # Low-level calls that return the id at once: the sweeper may reap an orphan before the
    # high-level ones would have read it back (or started it).
    network_id = client.api.create_network(f"sageport-train-orphan-{suffix}", labels=labels)["Id"]
    container_id = client.api.create_container(
        busybox_image, ["sleep", "300"], name=f"sageport-train-orphan-{suffix}", labels=labels
    )["Id"]
    try:
        client.api.start(container_id)
    except docker.errors.NotFound:
        pass  # reaped already
    foreign = client.containers.run(
        busybox_image,
        ["sleep", "300"],
        name=f"other-stack-{suffix}",
        labels={**labels, keys.STACK: "another-installation"},
        detach=True,
    )
    try:
        deadline = time.monotonic() + 30
        while (
            _exists(client.containers, container_id) or _exists(client.networks, network_id)
        ) and time.monotonic() < deadline:
            time.sleep(0.5)

        assert not _exists(client.containers, container_id)
        assert not _exists(client.networks, network_id)
        assert _exists(client.containers, foreign.id), (
            "another installation's containers are not ours to reap"
        )
    finally:
        foreign.remove(force=True)


def _exists(collection, object_id: str) -> bool:
    try:
        collection.get(object_id)
    except docker.errors.NotFound:
        return False
    return True
