"""Who is calling. A container's request is identified by its source address on the node's tier
network: the container there with that address carries `sageport.resource` = the ARN of the job it
serves (a training job, or a HyperPodPyTorchJob: `elastic/replicas.holder_arn`), whose account
owns the namespaces it uses. Anything else is refused (403).

The address → job table is cached: it is re-read from the engine when it is older than TTL, or on
a miss (at most every MIN_REFRESH seconds, so that unknown callers cannot flood the engine).
A short TTL bounds how long a released address could still name its former container."""

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("sageport.tier")

RESOURCE_LABEL = "sageport.resource"  # runtime.labels.RESOURCE (the tier imports no Django code)
TTL_SECONDS = 5.0
MIN_REFRESH_SECONDS = 0.5
# The jobs whose containers may use the tier: training jobs and HyperPodPyTorchJobs' replicas.
_JOB_ARN = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:(?P<account>\d{12}):(training-job|hyperpod-pytorch-job)/.+$"
)
_ACCOUNT = re.compile(r"^\d{12}$")


@dataclass(frozen=True)
class Caller:
    account: str
    job_arn: str | None  # None for a peer's request that names no job


def caller_of_job(job_arn: str) -> Caller | None:
    match = _JOB_ARN.match(job_arn)
    return Caller(match["account"], job_arn) if match else None


def is_account(value: str) -> bool:
    return bool(_ACCOUNT.match(value))


class DockerIdentity:
    """`job_of(address)` and `job_running(arn)` from the Docker engine."""

    def __init__(self, network: str, client_factory: Callable | None = None, clock=time.monotonic):
        self._network = network
        self._client_factory = client_factory or _docker_client
        self._client = None
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[str, str] = {}
        self._refreshed = float("-inf")

    def job_of(self, address: str) -> str | None:
        with self._lock:
            age = self._clock() - self._refreshed
            if age > TTL_SECONDS or (address not in self._jobs and age > MIN_REFRESH_SECONDS):
                self._refresh()
            return self._jobs.get(address)

    def job_running(self, job_arn: str) -> bool:
        """Whether any running container serves the job (True when the engine cannot tell, so
        that nothing is deleted on a guess)."""
        try:
            with self._lock:
                client = self._engine()
            return bool(client.containers.list(filters={"label": f"{RESOURCE_LABEL}={job_arn}"}))
        except Exception as error:  # the engine's errors are many (API, connection, timeout)
            log.warning("tier: the Docker engine did not say whether %s runs: %s", job_arn, error)
            return True

    def _refresh(self) -> None:
        self._refreshed = self._clock()
        try:
            containers = self._engine().containers.list(
                filters={"network": self._network, "label": RESOURCE_LABEL})
        except Exception as error:  # keep the last table; an unknown caller is refused meanwhile
            log.warning("tier: the Docker engine did not list network %s: %s", self._network, error)
            return
        jobs = {}
        for container in containers:
            networks = container.attrs.get("NetworkSettings", {}).get("Networks") or {}
            address = (networks.get(self._network) or {}).get("IPAddress")
            if address:
                jobs[address] = container.labels.get(RESOURCE_LABEL, "")
        self._jobs = jobs

    def _engine(self):
        if self._client is None:
            self._client = self._client_factory()
        return self._client


def _docker_client():
    import docker

    return docker.from_env(timeout=10)
