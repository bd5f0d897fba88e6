"""What a training container placed on a node whose cluster enables the checkpoint tier gets
(clusters/tier_network.py, training/containers.py)."""
import pytest

from clusters import tier_network, tiering
from runtime.base import Mount
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_job, make_node
from training import containers, scheduler, workspace


@pytest.fixture
def tier_enabled(monkeypatch):
    monkeypatch.setattr(tiering, "tier_for_node", lambda name: tiering.NodeTier("c1", 20, (name,)))


def placed_job(isolated=False):
    make_node(gpus=0, cpus=8, memory_gib=32)
    job = make_job("ml.m5.large", count=2, EnableNetworkIsolation=isolated)
    scheduler.place(job)
    return job


def test_a_container_on_a_tier_node_reaches_the_service_by_the_librarys_name(db, tier_enabled):
    job = placed_job()
    tier = tier_network.reach_for(FakeRuntime(), "node-a", isolated=False)
    spec = containers.spec_for(job, "algo-1", "10.0.0.0/24", tier)
    assert tier.network in spec.extra_networks
    entries = containers.host_entries(job, "algo-1", "10.0.0.0/24", tier)
    assert entries[tier_network.SERVICE_NAME] == tier.address
    assert entries["algo-2"]  # the job's own names are still there
    log_dir = workspace.host_workspace(job, "algo-1").checkpointing_log_dir
    assert Mount(str(log_dir), "/var/log/sagemaker_checkpointing") in spec.mounts


def test_the_library_log_is_kept_beside_the_containers_trees_not_inside_one(db, tier_enabled):
    host = workspace.host_workspace(placed_job(), "algo-2")
    expected = host.root / "checkpointing-logs" / "sagemaker_checkpointing" / "algo-2"
    assert host.checkpointing_log_dir == expected
    for mount in host.mounts():
        assert not str(host.checkpointing_log_dir).startswith(mount.host_path + "/")


def test_a_network_isolated_job_gets_no_tier(db, tier_enabled):
    assert tier_network.reach_for(FakeRuntime(), "node-a", isolated=True) is None


def test_a_node_without_the_tier_gives_its_containers_nothing_of_it(db):
    job = placed_job()
    assert tier_network.reach_for(FakeRuntime(), "node-a", isolated=False) is None
    spec = containers.spec_for(job, "algo-1", "10.0.0.0/24")
    assert "/var/log/sagemaker_checkpointing" not in [mount.container_path for mount in spec.mounts]
    assert tier_network.SERVICE_NAME not in containers.host_entries(job, "algo-1", "10.0.0.0/24")
