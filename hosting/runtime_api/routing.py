"""Which containers InvokeEndpoint may reach, and how every serving process learns of a change.

The database says which containers are routable (status InService in a deployment that takes
traffic, of an endpoint that is InService or Updating). Serving processes keep that in memory and
never query the database per request; a counter in Redis tells them when to reload:

- a writer commits its change, then increments `version` and publishes the new version on the
  `changes` channel (`announce_change`, `bump`);
- each serving process (the data plane's, the API's) listens on that channel (`ChangeListener`)
  and, on a message or else every `SAGEPORT_ROUTING_REFRESH_SECONDS`, reads `version`, reloads the
  table from the database when it moved, and publishes an *ack*: the version it loaded and how many
  requests it has in flight per container (a Redis key with a TTL, so a dead process's ack goes).
  The message makes a change take effect at once; the periodic read is the safety net for a
  message missed (a process not yet subscribed, a dropped connection).

A container may be stopped once every live ack has a version at least the one returned by the
`bump` after it left the routing table, and no ack lists it as busy (`has_drained`). Why this is
safe: an ack with version ≥ V was read after the bump, hence after the commit, so that process's
table no longer has the container. A process that starts routing writes a placeholder ack (version
0) before reading the version, so a drainer either sees it and waits, or it read the new state.

Requests never touch Redis (hosting/runtime_api/router.py): while Redis is away a serving process reloads
its table from the database at every refresh instead and serves on; drains wait, since neither `bump`
nor `has_drained` can answer. A process whose ack vanished with a restarted Redis republishes it
within one refresh, which the drain's minimum wait covers."""

import functools
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import transaction

from hosting import containers, multi_model, serverless
from hosting.models import ROUTED_PHASES, ContainerStatus, Endpoint, EndpointStatus, InferenceComponent
from hosting.requests import model_container

log = logging.getLogger(__name__)

ROUTABLE_ENDPOINT_STATUSES = (EndpointStatus.IN_SERVICE, EndpointStatus.UPDATING)


@functools.cache
def _redis() -> redis.Redis:
    """One client (a thread-safe connection pool) per process."""
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)


def _key(name: str) -> str:
    return f"sageport:{settings.SAGEPORT_STACK_ID}:routing:{name}"


# --- Writers' side ---------------------------------------------------------------------------


def bump() -> int:
    """Tell every serving process to reload; returns the new version."""
    client = _redis()
    version = int(client.incr(_key("version")))
    client.publish(_key("changes"), version)
    return version


def announce_change() -> None:
    """Bump once the current transaction commits (a reload before the commit would miss it)."""
    transaction.on_commit(_bump_quietly)


def _bump_quietly() -> None:
    try:
        bump()
    except redis.RedisError as error:  # serving processes also reload on a timer
        log.warning("could not announce a routing change: %s", error)


@dataclass(frozen=True)
class Ack:
    version: int
    busy: dict[str, int]  # container name -> requests in flight


def acks() -> list[Ack]:
    client = _redis()
    keys = list(client.scan_iter(match=_key("ack:*"), count=100))
    found = []
    for raw in client.mget(keys) if keys else []:
        if raw is not None:  # expired between the scan and the read
            value = json.loads(raw)
            found.append(Ack(version=value["version"], busy=value["busy"]))
    return found


def has_drained(container_name: str, version: int) -> bool:
    """No serving process can send `container_name` a new request, and none has one in flight."""
    return all(ack.version >= version and not ack.busy.get(container_name) for ack in acks())


# --- Serving processes' side ---------------------------------------------------------------------


class ChangeListener:
    """Waits for the writers' announcements on the `changes` channel. Redis away: it waits the
    whole timeout (the caller's periodic check goes on) and subscribes again on the next wait."""

    def __init__(self):
        self._pubsub: redis.client.PubSub | None = None

    def wait(self, timeout: float) -> None:
        """Return when a change is announced, or after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        try:
            if self._pubsub is None:
                self._pubsub = _redis().pubsub(ignore_subscribe_messages=True)
                self._pubsub.subscribe(_key("changes"))
            while (left := deadline - time.monotonic()) > 0:
                if self._pubsub.get_message(timeout=left) is not None:
                    while self._pubsub.get_message(timeout=0) is not None:
                        pass  # several announcements: one reload covers them all
                    return
        except redis.RedisError:
            self.close()
            time.sleep(max(deadline - time.monotonic(), 0))

    def close(self) -> None:
        if self._pubsub is not None:
            try:
                self._pubsub.close()
            except redis.RedisError:
                pass
            self._pubsub = None


def current_version() -> int:
    return int(_redis().get(_key("version")) or 0)


def publish_ack(process_id: str, version: int, busy: dict[str, int]) -> None:
    ttl_ms = int(settings.SAGEPORT_ROUTING_ACK_TTL_SECONDS * 1000)
    _redis().set(_key(f"ack:{process_id}"), json.dumps({"version": version, "busy": busy}), px=ttl_ms)


@dataclass(frozen=True)
class MultiModelSource:
    """Where a multi-model container's models come from and are staged (hosting/multi_model.py)."""

    account_id: str  # the model's account, whose rights read the prefix
    prefix_uri: str  # the model's ModelDataUrl
    models_dir: str  # on the host; the container mounts it at /opt/ml/models


@dataclass(frozen=True)
class Backend:
    container_name: str
    address: str  # its node's address (Node.address)
    port: int
    multi_model: MultiModelSource | None = None


@dataclass(frozen=True)
class ServerlessLimits:
    """A serverless variant's deployment, MaxConcurrency and container count when the table was
    loaded (hosting/runtime_api/serverless_gate.py)."""

    deployment_pk: int
    max_concurrency: int
    desired_count: int


@dataclass(frozen=True)
class RouteGroup:
    """One variant of one deployment: its share of the endpoint's traffic and its containers."""

    variant_name: str
    weight: float
    backends: tuple[Backend, ...]
    serverless: ServerlessLimits | None = None


@dataclass(frozen=True)
class EndpointRoute:
    endpoint_name: str
    account_id: str
    region: str
    status: str
    groups: tuple[RouteGroup, ...]
    # Inference components (hosting/components.py): the endpoint's instances host components, or
    # this route is a component's (its copies) on the endpoint of that ARN.
    hosts_components: bool = False
    component_of: str = ""


RoutingTable = dict[str, EndpointRoute]  # by endpoint ARN


def load_table() -> RoutingTable:
    endpoints = Endpoint.objects.prefetch_related("deployments__containers__node")
    parents = dict(InferenceComponent.objects.values_list("runner__endpoint_arn", "endpoint__endpoint_arn"))
    return {
        endpoint.endpoint_arn: _route(endpoint, parents.get(endpoint.endpoint_arn, ""))
        for endpoint in endpoints
    }


def _route(endpoint: Endpoint, component_of: str = "") -> EndpointRoute:
    groups: list[RouteGroup] = []
    if endpoint.endpoint_status in ROUTABLE_ENDPOINT_STATUSES:
        deployments = [d for d in endpoint.deployments.all() if d.phase in ROUTED_PHASES]
        shifted = sum(d.traffic_percent for d in deployments if d.phase != "Active")
        for deployment in deployments:
            share = deployment.traffic_percent if deployment.phase != "Active" else 100.0 - shifted
            groups += _groups(deployment, share / 100.0, endpoint.account_id)
    return EndpointRoute(
        endpoint_name=endpoint.endpoint_name,
        account_id=endpoint.account_id,
        region=endpoint.region,
        status=endpoint.endpoint_status,
        groups=tuple(groups),
        hosts_components=any(
            not containers.runs_containers(deployment, name)
            for deployment in endpoint.deployments.all()
            for name in deployment.desired
        ),
        component_of=component_of,
    )


def _groups(deployment, share: float, account_id: str) -> Iterable[RouteGroup]:
    weights = {name: values["DesiredWeight"] for name, values in deployment.desired.items()}
    total = sum(weights.values())
    for name, weight in weights.items():
        source = _multi_model_source(deployment, name, account_id)
        backends = tuple(
            Backend(container.name, container.node.address, container.host_port, source)
            for container in deployment.containers.all()
            if container.variant_name == name and container.status == ContainerStatus.IN_SERVICE
        )
        # All weights zero: SageMaker would send nothing; spreading evenly keeps the endpoint usable.
        fraction = weight / total if total else 1.0 / len(weights)
        yield RouteGroup(variant_name=name, weight=share * fraction, backends=backends,
                         serverless=_serverless_limits(deployment, name))


def _serverless_limits(deployment, variant_name: str) -> ServerlessLimits | None:
    values = deployment.desired[variant_name]
    config = serverless.effective(values)
    if config is None:
        return None
    return ServerlessLimits(deployment.pk, config["MaxConcurrency"], values["DesiredInstanceCount"])


def _multi_model_source(deployment, variant_name: str, account_id: str) -> MultiModelSource | None:
    """The variant's models' source when its model is a MultiModel one (a snapshot without the
    variant's model, as some tests write, is a single-model one)."""
    variants = deployment.snapshot.get("EndpointConfig", {}).get("ProductionVariants", ())
    model_name = next((v.get("ModelName") for v in variants if v["VariantName"] == variant_name), None)
    model = deployment.snapshot.get("Models", {}).get(model_name)
    if model is None or not multi_model.is_multi_model(model_container(model)):
        return None
    models_dir = containers.model_dir(deployment, model_name)
    return MultiModelSource(account_id, model_container(model)["ModelDataUrl"], str(models_dir))
