"""An endpoint's deployment history: the steps of its rollouts as they happen (a fleet created,
its health gate passed, traffic shifted, the old fleet retired and removed, a rollback and its
reason, a change of weights or capacities).

The writers are the places where each step is decided (hosting/services.py for what a request
asks, hosting/reconciler.py for what the worker carries out); they record in the transaction of
the state change they tell of, so a crash loses or doubles neither. The history is bounded: an
endpoint keeps its newest `MAX_EVENTS` steps."""

from django.utils import timezone

from hosting.models import Endpoint, EndpointDeploymentEvent

MAX_EVENTS = 500
MESSAGE_LIMIT = 2048


def record(endpoint: Endpoint, kind: str, config_name: str, message: str) -> None:
    EndpointDeploymentEvent.objects.create(
        endpoint_id=endpoint.pk,
        time=timezone.now(),
        kind=kind,
        endpoint_config_name=config_name,
        message=message[:MESSAGE_LIMIT],
    )
    oldest_kept = newest_first(endpoint).values_list("pk", flat=True)[MAX_EVENTS : MAX_EVENTS + 1]
    if oldest_kept:
        EndpointDeploymentEvent.objects.filter(endpoint_id=endpoint.pk, pk__lte=oldest_kept[0]).delete()


def newest_first(endpoint: Endpoint):
    return EndpointDeploymentEvent.objects.filter(endpoint_id=endpoint.pk).order_by("-time", "-pk")
