"""InvokeEndpoint's InferenceComponentName (the X-Amzn-SageMaker-Inference-Component header):
a request to an endpoint that hosts inference components goes to the named component's copies,
whose route is the component's runner's (hosting/components.py); SageMaker's refusals when the
name is missing, not wanted, or names no component of that endpoint."""

from hosting.runtime_api.contract import ValidationError
from hosting.runtime_api.router import Router, usable
from hosting.runtime_api.routing import EndpointRoute
from protocol.arns import make_arn
from protocol.context import RequestContext

RESOURCE_TYPE = "inference-component"  # a component's ARN is arn:…:inference-component/<name>
MISSING = (
    "Inference Component Name header is required for endpoints to which you plan to deploy inference "
    "components. Please include Inference Component Name header or consider using SageMaker models."
)
NOT_WANTED = (
    "Inference Component Name header is not allowed for endpoints to which you dont plan to deploy "
    "inference components. Please remove the Inference Component Name header and try again."
)


def named_in(arn: str) -> str:
    """The inference component whose copies `arn` routes to, or "" for an endpoint's own ARN (a
    component's metrics carry its name as their dimension)."""
    _, found, name = arn.partition(f":{RESOURCE_TYPE}/")
    return name if found else ""


def applies(route: EndpointRoute, params: dict) -> bool:
    return route.hosts_components or "InferenceComponentName" in params


def resolve(
    router: Router, ctx: RequestContext, endpoint_name: str, endpoint_arn: str, params: dict
) -> tuple[str, EndpointRoute]:
    """(the component's ARN, its route): where the request goes instead of the endpoint. May read
    the database (a component its table lacks): off an event loop."""
    endpoint = router.lookup(endpoint_arn)
    name = params.get("InferenceComponentName")
    if name is None:
        raise ValidationError(MISSING, extra={"ErrorCode": "INFERENCE_COMPONENT_NAME_MISSING"})
    if endpoint is None or not endpoint.hosts_components:
        raise ValidationError(NOT_WANTED)
    arn = make_arn(ctx.region, ctx.account_id, RESOURCE_TYPE, name)
    route = router.lookup(arn)
    if not usable(route):
        route = router.route(arn)
    if route is None or route.component_of != endpoint_arn:
        raise ValidationError(
            f"Inference Component {name} of account {ctx.account_id} not found on endpoint {endpoint_name}."
        )
    if not usable(route):
        raise ValidationError(
            f"Inference Component {name} of account {ctx.account_id} is not InService "
            f"(status: {route.status})."
        )
    return arn, route
