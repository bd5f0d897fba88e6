"""HyperPodPyTorchJobs and the checkpoint tier: what a replica on a tier-enabled node is given (the
library's fixed name in its /etc/hosts, the node's tier network, the library's log directory), and
a write the library reported failed made visible in the job's status (elastic/checkpointing.py).

The library's log line format and its writer's logger names are AWS's
(amzn_sagemaker_checkpointing/checkpointing/filesystem/storage_base.py, writer.py)."""
import os

import pytest

from clusters import tier_network
from clusters.tier_network import TierReach
from elastic import checkpointing, operator, replicas
from elastic.models import ElasticReplica, JobPhase
from tests.unit.elastic.test_operator import (  # noqa: F401 (autouse fixtures)
    agents,
    complete,
    engine,
    fixed_job,
    node,
    settle,
    weights,
)

pytestmark = pytest.mark.django_db(transaction=True)

TIER = TierReach("sageport-test-tier-node", "172.31.0.1")
WRITER_ERROR = (
    "[2026-11-27 15:00:00,000] [ns-world-1] [sagemaker.checkpointing.writer.rank_0] [ERROR] "
    "[writer.py:214] [Rank 0] Step 5: In-memory write failed:Connection error: NameResolutionError"
)
READER_ERROR = (
    "[2026-11-27 15:00:00,000] [ns-world-1] [sagemaker.checkpointing.reader.rank_0] [ERROR] "
    "[reader.py:177] [Rank 0] Step None: No checkpoints to read metadata"
)
WRITER_INFO = (
    "[2026-11-27 15:00:01,000] [ns-world-1] [sagemaker.checkpointing.writer.rank_0] [INFO] "
    "[writer.py:206] [Rank 0] Step 10: In-memory write completed in 0.010s (1.0 MB/s)"
)


def test_the_newest_writer_error_is_found_and_reader_errors_are_not_failed_writes(tmp_path):
    log = tmp_path / "ns-world-1_checkpointing.log"
    log.write_text(f"{READER_ERROR}\n")
    assert checkpointing.newest_write_error(tmp_path) is None  # a first start finds nothing to load
    log.write_text(f"{READER_ERROR}\n{WRITER_ERROR}\n{WRITER_INFO}\n")
    assert checkpointing.newest_write_error(tmp_path) == WRITER_ERROR
    assert checkpointing.newest_write_error(tmp_path / "gone") is None


def test_a_log_the_container_swapped_for_a_link_is_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(f"{WRITER_ERROR}\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    os.symlink(secret, logs / "ns_checkpointing.log")
    assert checkpointing.newest_write_error(logs) is None


@pytest.fixture
def tier_enabled(monkeypatch, engine):  # noqa: F811 (the fixture imported above)
    """The node's cluster enables the tier (clusters/tier_network.reach_for made its network)."""
    engine.ensure_gateway_network(TIER.network, {})
    monkeypatch.setattr(operator.tier_network, "reach_for", lambda runtime, node_name, isolated: TIER)


def test_a_replica_on_a_tier_enabled_node_reaches_the_tier_by_the_librarys_name(engine, tier_enabled):  # noqa: F811
    (job,) = settle(fixed_job(2))
    assert job.phase == JobPhase.RUNNING
    for replica in ElasticReplica.objects.filter(job=job):
        spec = engine.containers[replica.container_name].spec
        hosts = replicas.hosts_file(job, replica).read_text().splitlines()
        assert f"172.31.0.1\t{tier_network.SERVICE_NAME}" in hosts  # kept when the world was named
        assert any(line.endswith(f"\t{job.name}-pods-1") for line in hosts)
        assert TIER.network in spec.extra_networks
        assert tier_network.LIBRARY_LOG_PATH in {mount.container_path for mount in spec.mounts}


def test_a_failed_write_is_the_jobs_condition_and_the_job_still_shows_its_phase(engine, agents):  # noqa: F811
    (job,) = settle(fixed_job(1))
    [replica] = ElasticReplica.objects.filter(job=job)
    log = replicas.checkpointing_log_directory(job, replica) / "ns-world-1_checkpointing.log"
    log.write_text(f"{WRITER_ERROR}\n{WRITER_INFO}\n")
    complete(agents, engine, job)
    (job,) = settle(job)

    assert job.phase == JobPhase.SUCCEEDED
    conditions = job.status["conditions"]
    assert [c["type"] for c in conditions if c["status"] == "True"][-1] == "Succeeded"
    [failed] = [c for c in conditions if c["type"] == "CheckpointsSaved"]
    assert (failed["status"], failed["reason"]) == ("False", "CheckpointWriteFailed")
    assert failed["message"] == f"{job.name}-pods-0: {WRITER_ERROR}"
