"""`make clean` (`manage.py uninstall`) removes this installation's containers, networks and data
directory, and nothing that does not carry its stack label."""
import os
import subprocess
import sys
import uuid

import docker
import pytest

from devstack.stack import PROJECT_DIR
from devstack.uninstall import mark
from runtime import labels


@pytest.fixture
def engine(docker_engine) -> docker.DockerClient:
    return docker_engine


def make_container(engine, image: str, name: str, **labelled: str):
    return engine.containers.create(image, ["sleep", "60"], name=name, labels=labelled)


def uninstall(data_dir, stack_id: str, *args: str) -> str:
    env = {
        **os.environ, "SAGEPORT_DATA_DIR": str(data_dir), "SAGEPORT_STACK_ID": stack_id,
        "SAGEPORT_TIER_MEMORY_DIR": str(data_dir.parent / "shm"),
    }
    completed = subprocess.run(
        [sys.executable, "manage.py", "uninstall", *args],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return completed.stdout


def exists(engine, kind: str, name: str) -> bool:
    collection = engine.containers if kind == "container" else engine.networks
    try:
        collection.get(name)
        return True
    except docker.errors.NotFound:
        return False


def test_uninstall_removes_only_what_carries_its_stack_label_then_its_data(engine, busybox_image, tmp_path):
    ours, theirs = f"uninstall-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    data_dir = tmp_path / "data"
    (data_dir / "jobs").mkdir(parents=True)
    mark(data_dir)
    our_checkpoints = tmp_path / "shm" / f"sageport-tier-{ours}-node-a"
    their_checkpoints = tmp_path / "shm" / f"sageport-tier-{theirs}-node-a"
    for memory in (our_checkpoints, their_checkpoints):
        (memory / "accounts").mkdir(parents=True)
    created = [
        ("container", make_container(engine, busybox_image, f"{ours}-c", **{labels.STACK: ours}).name),
        ("network", engine.networks.create(f"{ours}-n", labels={labels.STACK: ours}).name),
    ]
    kept = [
        ("container", make_container(engine, busybox_image, f"{theirs}-c", **{labels.STACK: theirs}).name),
        ("container", make_container(engine, busybox_image, f"{theirs}-unlabelled").name),
        ("network", engine.networks.create(f"{theirs}-n", labels={labels.STACK: theirs}).name),
    ]
    try:
        output = uninstall(data_dir, ours)

        assert [thing for thing in created if exists(engine, *thing)] == []
        assert [thing for thing in kept if exists(engine, *thing)] == kept
        assert not data_dir.exists()
        assert not our_checkpoints.exists() and their_checkpoints.exists()
        assert f"removed 1 containers and 1 networks labelled sageport.stack={ours}" in output
    finally:
        for kind, name in created + kept:
            if exists(engine, kind, name):
                (engine.containers if kind == "container" else engine.networks).get(name).remove(
                    **({"force": True} if kind == "container" else {})
                )


def test_a_directory_that_is_not_sageports_is_never_removed(tmp_path):
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / "cat.jpg").write_text("meow")

    output = uninstall(stranger, f"nothing-{uuid.uuid4().hex[:8]}")

    assert (stranger / "cat.jpg").read_text() == "meow"
    assert "not removed: it holds none of .sageport-data-dir, sageport.sqlite3" in output
