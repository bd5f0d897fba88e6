"""Session-wide services for the tests: SeaweedFS, Redis, the example images and the live stack.

The session's environment (free ports, a temporary data dir, short timings) is exported by
tests/settings.py before Django reads its settings. Every server runs under one `Supervisor`
and is stopped at the end of the session, together with any container or network the session
left behind."""
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import boto3
import docker
import pytest
from django.conf import settings

from controlplane.stack import (
    PROJECT_DIR,
    Supervisor,
    api_spec,
    beat_spec,
    redis_spec,
    seaweedfs_spec,
    worker_spec,
)

MANAGED_LABEL = "sageport.managed=true"
BUILD_IMAGES_SCRIPT = PROJECT_DIR / "scripts" / "build-images.sh"
SESSION_STARTED_AT = datetime.now(UTC)


@dataclass(frozen=True)
class S3Service:
    endpoint_url: str


@dataclass(frozen=True)
class RedisService:
    url: str


@pytest.fixture(scope="session")
def supervisor():
    data_dir = Path(settings.DATA_DIR)
    supervisor = Supervisor(log_dir=data_dir / "logs")
    yield supervisor
    supervisor.stop_all()
    _remove_docker_objects_left_by_this_session(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_service(supervisor) -> S3Service:
    supervisor.start(seaweedfs_spec(Path(settings.DATA_DIR), settings.SAGEPORT_S3_ENDPOINT_URL))
    return S3Service(endpoint_url=settings.SAGEPORT_S3_ENDPOINT_URL)


@pytest.fixture(scope="session")
def s3_client(s3_service):
    """An S3 client with the platform's own key pair (the one the worker uses)."""
    return boto3.client(
        "s3",
        endpoint_url=s3_service.endpoint_url,
        aws_access_key_id=settings.SAGEPORT_S3_ACCESS_KEY_ID,
        aws_secret_access_key=settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
        region_name=settings.SAGEPORT_S3_REGION,
    )


@pytest.fixture(scope="session")
def redis_service(supervisor) -> RedisService:
    supervisor.start(redis_spec(Path(settings.DATA_DIR), settings.CELERY_BROKER_URL))
    return RedisService(url=settings.CELERY_BROKER_URL)


@pytest.fixture(scope="session")
def busybox_image() -> str:
    return _build_example_image("busybox")


@pytest.fixture(scope="session")
def python_image() -> str:
    return _build_example_image("python")


def _build_example_image(name: str) -> str:
    """Build (or find in the local engine) one example image; return its tag."""
    completed = subprocess.run(
        [str(BUILD_IMAGES_SCRIPT), name], check=True, stdout=subprocess.PIPE, text=True, timeout=1800
    )
    return completed.stdout.strip().splitlines()[-1]


def _remove_docker_objects_left_by_this_session(data_dir: Path) -> None:
    """Remove the Sageport containers and networks created during this session.

    Other test sessions may share the engine, so a container is removed only if it was created
    after this session started and mounts nothing outside this session's data dir."""
    try:
        client = docker.from_env()
    except docker.errors.DockerException:
        return  # no engine, so nothing can have been left in it
    for container in client.containers.list(all=True, filters={"label": MANAGED_LABEL}):
        if _created_during_session(container.attrs["Created"]) and _mounts_only_under(container, data_dir):
            container.remove(force=True)
    for network in client.networks.list(filters={"label": MANAGED_LABEL}):
        if _created_during_session(network.attrs["Created"]):
            try:
                network.remove()
            except docker.errors.APIError:
                pass  # still used by another session's containers


def _created_during_session(created: str) -> bool:
    # The engine reports RFC 3339 with nanoseconds; seconds are precise enough here.
    return datetime.fromisoformat(created[:19]).replace(tzinfo=UTC) >= SESSION_STARTED_AT.replace(microsecond=0)


def _mounts_only_under(container, data_dir: Path) -> bool:
    sources = [mount.get("Source", "") for mount in container.attrs.get("Mounts", []) if mount.get("Type") == "bind"]
    return all(Path(source).is_relative_to(data_dir) for source in sources)
