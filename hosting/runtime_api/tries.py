"""The containers one InvokeEndpoint request is sent to, in turn (dataplane.py, streaming.py and
multi_model.py try them so): one that refuses the connection (nothing was sent,
exchange.Refused) is avoided and another one chosen, any other failure ends the request with the
error InvokeEndpoint answers (contract.py)."""

import time

from django.conf import settings

from hosting.runtime_api import components, contract
from hosting.runtime_api.exchange import NoAnswer, Refused, TimedOut
from hosting.runtime_api.invocation_metrics import Invocation
from hosting.runtime_api.router import Choice, NoRoute, Router
from protocol.context import RequestContext


class Tries:
    """One request's tries: `choose` a container, then `failed` or not, then `ended` (which notes
    the exchange for the endpoint's CloudWatch metrics, whatever its outcome)."""

    def __init__(self, router: Router, arn: str, target: str | None, ctx: RequestContext, endpoint_name: str):
        self.router, self.arn, self.target = router, arn, target
        self.ctx, self.endpoint_name = ctx, endpoint_name
        self.refused: set[str] = set()
        self.sent = time.perf_counter()

    def choose(self, prefer: frozenset[str] = frozenset()) -> Choice:
        """The next container (one in `prefer` if it can), counted in flight there until `ended`."""
        try:
            return self.router.choose(self.arn, self.target, avoid=self.refused, prefer=prefer)
        except NoRoute:
            raise contract.no_container(self.ctx, self.endpoint_name) from None

    def failed(self, choice: Choice, error: Refused | NoAnswer | TimedOut) -> None:
        """Returns when another container is to be tried; raises InvokeEndpoint's error otherwise."""
        if isinstance(error, Refused):
            self.refused.add(choice.backend.container_name)
            return
        if isinstance(error, TimedOut):
            seconds = settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS
            raise contract.timed_out(self.ctx, self.endpoint_name, seconds) from None
        message = f"The container did not answer: {error}"
        raise contract.no_answer(self.ctx, self.endpoint_name, message) from None

    def ended(self, choice: Choice, status: int) -> Invocation:
        self.router.release(choice)
        return Invocation(self.ctx.account_id, self.ctx.region, self.endpoint_name, choice.variant_name,
                          time.perf_counter() - self.sent, status, components.named_in(self.arn))
