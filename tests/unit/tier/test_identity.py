"""Callers are named by the Docker engine: the container at the source address on the node's
tier network, and its training job's ARN."""

from types import SimpleNamespace

from tier.identity import Caller, DockerIdentity, caller_of_job

NETWORK = "sageport-tier-node-a"
JOB = "arn:aws:sagemaker:us-east-1:123456789012:training-job/j"


def container(address: str, arn: str):
    return SimpleNamespace(labels={"sageport.resource": arn},
                           attrs={"NetworkSettings": {"Networks": {NETWORK: {"IPAddress": address}}}})


class FakeEngine:
    def __init__(self):
        self.on_network: list = []
        self.lists: list[dict] = []
        self.containers = self

    def list(self, filters):
        self.lists.append(filters)
        if "network" in filters:
            return list(self.on_network)
        wanted = filters["label"].split("=", 1)[1]
        return [c for c in self.on_network if c.labels["sageport.resource"] == wanted]


def identity_with(engine: FakeEngine, now: list[float]) -> DockerIdentity:
    return DockerIdentity(NETWORK, client_factory=lambda: engine, clock=lambda: now[0])


def test_a_training_container_is_known_by_its_address():
    engine, now = FakeEngine(), [0.0]
    engine.on_network = [container("172.30.0.2", JOB)]
    identity = identity_with(engine, now)
    assert identity.job_of("172.30.0.2") == JOB
    assert caller_of_job(JOB).account == "123456789012"
    assert engine.lists[0] == {"network": NETWORK, "label": "sageport.resource"}


def test_an_unknown_address_refreshes_the_table_at_most_twice_a_second():
    engine, now = FakeEngine(), [0.0]
    identity = identity_with(engine, now)
    assert identity.job_of("172.30.0.3") is None
    engine.on_network = [container("172.30.0.3", JOB)]
    assert identity.job_of("172.30.0.3") is None  # just refreshed
    now[0] = 0.6
    assert identity.job_of("172.30.0.3") == JOB
    assert len(engine.lists) == 2


def test_a_released_address_is_forgotten_within_the_ttl():
    engine, now = FakeEngine(), [0.0]
    engine.on_network = [container("172.30.0.4", JOB)]
    identity = identity_with(engine, now)
    assert identity.job_of("172.30.0.4") == JOB
    engine.on_network = []
    now[0] = 6.0
    assert identity.job_of("172.30.0.4") is None


def test_only_training_job_arns_name_a_caller():
    assert caller_of_job("arn:aws:sagemaker:us-east-1:123456789012:endpoint/e") is None
    assert caller_of_job("") is None


def test_a_job_runs_while_a_container_carries_its_arn_and_an_engine_failure_deletes_nothing():
    engine, now = FakeEngine(), [0.0]
    engine.on_network = [container("172.30.0.5", JOB)]
    identity = identity_with(engine, now)
    assert identity.job_running(JOB) and not identity.job_running(JOB + "x")

    def broken():
        raise ConnectionError("engine down")

    assert DockerIdentity(NETWORK, client_factory=broken).job_running(JOB)
    assert DockerIdentity(NETWORK, client_factory=broken).job_of("172.30.0.5") is None


def test_a_hyperpod_job_replica_is_admitted_as_its_job_of_its_account():
    """A HyperPodPyTorchJob's replicas carry the job's holder ARN (elastic/replicas.holder_arn): the
    tier serves them as that job, in its account's namespaces; other resources are refused."""
    replica = "arn:aws:sagemaker:us-east-1:210987654321:hyperpod-pytorch-job/0f2c9a1e-uid"
    assert caller_of_job(replica) == Caller("210987654321", replica)
    assert caller_of_job("arn:aws:sagemaker:us-east-1:123456789012:endpoint/e") is None
    assert caller_of_job("arn:aws:sagemaker:us-east-1:123456789012:hyperpod-pytorch-job/") is None
