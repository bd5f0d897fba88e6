"""Stand-ins for the operator's unit tests: AWS's elastic agents as a state machine per replica
(what `hyperpodrun` answers on /status, /start, /stop, /shutdown), and HyperPodPyTorchJob rows as
the API stores them."""
import itertools
import uuid

from django.utils import timezone

from elastic import spec as job_spec
from elastic import status
from elastic.agents import AgentUnreachable
from elastic.models import HyperPodJob

_names = itertools.count(1)


class FakeAgents:
    """One agent per published port: `ready` once its container runs (or `first_status`, for
    agents still starting); /start → running, a graceful /stop → ready (the test may hold it in
    `stopping`), /shutdown → shutdown."""

    def __init__(self):
        self.first_status = "ready"
        self.state: dict[int, str] = {}
        self.started: dict[int, list[dict]] = {}
        self.stops: dict[int, list[dict]] = {}
        self.shutdowns: set[int] = set()
        self.unresponsive_to_stop: set[int] = set()
        self.refusing_start: set[int] = set()
        self.progress: dict[int, dict] = {}

    def agent(self, address: str, port: int):
        agents = self

        class Agent:
            def status(self):
                answer = {"status": agents.state.setdefault(port, agents.first_status)}
                if port in agents.progress:
                    answer["progress"] = agents.progress[port]
                return answer

            def start(self, body):
                if port in agents.refusing_start:
                    raise AgentUnreachable("POST /start: HTTP 500")
                if agents.state.setdefault(port, agents.first_status) != "ready":
                    raise AgentUnreachable(f"start in state {agents.state[port]}")
                agents.state[port] = "running"
                agents.started.setdefault(port, []).append(body)

            def stop(self, graceful, timeout):
                agents.stops.setdefault(port, []).append({"is_graceful": graceful, "timeout": timeout})
                agents.state[port] = "stopping" if port in agents.unresponsive_to_stop else "ready"

            def shutdown(self):
                agents.shutdowns.add(port)
                agents.state[port] = "shutdown"

        return Agent()

    def set_all(self, value: str, ports) -> None:
        for port in ports:
            self.state[port] = value


def manifest(name=None, groups=None, elastic=None, labels=None, run_policy=None) -> dict:
    groups = groups or [{"name": "pods", "replicas": 1, "gpus": 1}]
    spec = {
        "replicaSpecs": [_group(**group) for group in groups],
        "runPolicy": {"jobMaxRetryCount": 2, **(run_policy or {})},
    }
    if elastic is not None:
        spec["elasticPolicy"] = elastic
    return {
        "apiVersion": job_spec.API_VERSION, "kind": job_spec.KIND,
        "metadata": {"name": name or f"job-{next(_names)}", "namespace": "default", "labels": labels or {}},
        "spec": spec,
    }


def _group(name, replicas, gpus=1, max_replicas=None, priority_class=None) -> dict:
    pod = {"containers": [{
        "name": "pytorch", "image": "elastic:latest",
        "resources": {"limits": {"nvidia.com/gpu": gpus}} if gpus else {},
    }]}
    if priority_class:
        pod["priorityClassName"] = priority_class
    group = {"name": name, "replicas": replicas, "template": {"spec": pod}}
    if max_replicas is not None:
        group["maxReplicas"] = max_replicas
    return group


def submit(document: dict, account_id="123456789012") -> HyperPodJob:
    """What the API stores for a valid submission."""
    problems = job_spec.validate(document)
    assert not problems, problems
    now = timezone.now()
    metadata = document["metadata"]
    return HyperPodJob.objects.create(
        account_id=account_id, region="us-east-1", namespace=metadata["namespace"], name=metadata["name"],
        uid=str(uuid.uuid4()), created_at=now, phase_since=now, status=status.initial_status(now),
        manifest={"metadata": metadata, "spec": job_spec.defaulted_spec(document)},
    )
