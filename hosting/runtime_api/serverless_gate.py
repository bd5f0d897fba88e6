"""InvokeEndpoint on a serverless endpoint: admission before the request is forwarded.

A request first takes one of the variant's MaxConcurrency slots (hosting/serverless_slots.py,
shared by every serving process): past it, SageMaker's runtime answers ThrottlingException, and
so does this one. Holding a slot, it makes sure the variant runs a container per request in flight
(hosting/serverless_scaling.py raises the count; the reconciler starts the container), then waits
until a container of the variant is InService in this process's routing table: that wait is the
cold start, bounded by the invocation timeout. The slot is given back when the request ends
(`leave`); a process killed mid-request frees it when it lapses.

The data plane's application uses it (`admit`, waiting on its event loop), on both ports
(api_port.py). Without Redis the slots cannot be counted: a request is let
through as if it were alone, so an endpoint stays usable (one container at least), unthrottled."""

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from kombu.exceptions import OperationalError

from hosting import serverless_scaling, serverless_slots
from hosting import tasks as hosting_tasks
from hosting.runtime_api.contract import ValidationError
from hosting.runtime_api.router import Router
from hosting.runtime_api.routing import EndpointRoute, RouteGroup
from protocol.context import RequestContext
from protocol.errors import ServiceError, ServiceUnavailable

log = logging.getLogger(__name__)

# How often a request waiting for its cold start looks at the routing table (in memory; the
# table itself is reloaded as soon as the reconciler announces the container).
WAIT_STEP_SECONDS = 0.05


class ThrottlingException(ServiceError):
    """Concurrent invocations past the variant's MaxConcurrency (the code SageMaker's runtime
    answers; botocore retries it with backoff)."""

    code = "ThrottlingException"
    status = 400


@dataclass(frozen=True)
class Admission:
    """A request's slot on a serverless variant, held until `leave`."""

    deployment_pk: int
    variant_name: str
    request_id: str


def serverless_group(route: EndpointRoute, target: str | None) -> RouteGroup | None:
    """The serverless variant the request goes to (a serverless endpoint has one); None for an
    instance-based endpoint."""
    return next(
        (
            group
            for group in route.groups
            if group.serverless is not None and (target is None or group.variant_name == target)
        ),
        None,
    )


async def admit(
    router: Router,
    route: EndpointRoute,
    arn: str,
    target: str | None,
    ctx: RequestContext,
    endpoint_name: str,
    request_id: str,
) -> Admission | None:
    """The request's admission: None for an instance-based endpoint; raises
    ThrottlingException past MaxConcurrency, ServiceUnavailable when no container started in time."""
    group = serverless_group(route, target)
    if group is None:
        return None
    admission, taken = await asyncio.to_thread(_take, group, request_id, endpoint_name)
    waiting = _Waiting(router, arn, admission, taken)
    try:
        while not await _ready(waiting):
            waiting.check_deadline(ctx, endpoint_name)
            await asyncio.sleep(WAIT_STEP_SECONDS)
    except BaseException:
        await asyncio.to_thread(leave, admission)
        raise
    return admission


async def _ready(waiting: "_Waiting") -> bool:
    if waiting.must_scale():  # a database transaction and a broker message: off the loop
        return await asyncio.to_thread(waiting.ready)
    return waiting.ready()


def refuse_stream(route: EndpointRoute, endpoint_name: str) -> None:
    """InvokeEndpointWithResponseStream is not served on a serverless endpoint."""
    if serverless_group(route, None) is not None:
        raise ValidationError(
            f"Endpoint {endpoint_name} is a serverless endpoint: InvokeEndpointWithResponseStream is "
            "not supported by Sageport for serverless endpoints; use InvokeEndpoint."
        )


async def leave_async(admission: Admission | None) -> None:
    if admission is not None:
        await asyncio.to_thread(leave, admission)


def leave(admission: Admission | None) -> None:
    """Give the slot back (blocking: Redis); a slot Redis did not take back lapses by itself."""
    if admission is None:
        return
    try:
        serverless_slots.release(admission.deployment_pk, admission.variant_name, admission.request_id)
    except redis.RedisError as error:
        log.warning("serverless slot %s not given back (it lapses): %s", admission.request_id, error)


def _take(group: RouteGroup, request_id: str, endpoint_name: str) -> tuple[Admission, int]:
    limits = group.serverless
    try:
        taken = serverless_slots.acquire(
            limits.deployment_pk, group.variant_name, request_id, limits.max_concurrency
        )
    except redis.RedisError as error:
        log.warning("serverless slots unavailable, %s admitted uncounted: %s", endpoint_name, error)
        taken = 1
    if taken is None:
        raise ThrottlingException(
            f"Rate exceeded: endpoint {endpoint_name} is serving its MaxConcurrency of "
            f"{limits.max_concurrency} concurrent invocations. Retry with backoff."
        )
    return Admission(limits.deployment_pk, group.variant_name, request_id), taken


class _Waiting:
    """One admitted request waiting for a container of its variant: `ready` once the table shows
    one InService (not necessarily a new one: a warm container serves it at once). Before that,
    the count is raised while the table shows fewer containers wanted than requests in flight
    (once per count seen: the table shows the new count only after its next reload)."""

    def __init__(
        self,
        router: Router,
        arn: str,
        admission: Admission,
        taken: int,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.router, self.arn, self.admission, self.taken = router, arn, admission, taken
        self.clock = clock
        self.deadline = clock() + settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS
        self.asked_at_count: int | None = None

    def _group(self) -> RouteGroup | None:
        route = self.router.lookup(self.arn)
        groups = route.groups if route else ()
        return next((g for g in groups if g.variant_name == self.admission.variant_name), None)

    def must_scale(self) -> bool:
        """Whether `ready` will write (a database transaction and a broker message: off the loop)."""
        group = self._group()
        return (
            group is not None
            and group.serverless is not None
            and group.serverless.desired_count < self.taken
            and self.asked_at_count != group.serverless.desired_count
        )

    def ready(self) -> bool:
        group = self._group()
        if group is None or group.serverless is None:
            return False
        if self.must_scale():
            self.asked_at_count = group.serverless.desired_count
            endpoint_id = serverless_scaling.scale_up(
                self.admission.deployment_pk, group.variant_name, self.taken
            )
            if endpoint_id is not None:
                _nudge(endpoint_id)
        return bool(group.backends)

    def check_deadline(self, ctx: RequestContext, endpoint_name: str) -> None:
        if self.clock() >= self.deadline:
            seconds = settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS
            raise ServiceUnavailable(
                f"No container of the serverless endpoint {endpoint_name} of account {ctx.account_id} "
                f"started within {seconds:g} s (cold start); try again."
            )


def _nudge(endpoint_id: int) -> None:
    try:
        hosting_tasks.enqueue(endpoint_id)
    except OperationalError as error:  # the sweeper finds the endpoint due
        log.warning("could not enqueue endpoint %s (%s); the sweeper will pick it up", endpoint_id, error)
