"""Mutations and queries of models, endpoint configs and endpoints, scoped to the caller's
account and region. Endpoint changes record intent (a status, a deployment row) and enqueue a
reconcile; the worker does the rest."""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from accounts import s3_tenancy
from hosting import history, requests, serverless
from hosting import tasks as hosting_tasks
from hosting import transitions as t
from hosting.models import (
    DeploymentEventKind,
    DeploymentPhase,
    Endpoint,
    EndpointConfig,
    EndpointDeployment,
    EndpointStatus,
    SageMakerModel,
)
from hosting.runtime_api import routing
from modelregistry.services import inference_container
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ValidationException
from protocol.listing import filtered_and_sorted

log = logging.getLogger(__name__)


def _scoped(model, ctx: RequestContext):
    return model.objects.filter(account_id=ctx.account_id, region=ctx.region)


def _already_exists(kind: str, arn: str) -> ValidationException:
    return ValidationException(f'Cannot create already existing {kind} "{arn}".')


# --- Models ----------------------------------------------------------------------------------


def model_arn(ctx: RequestContext, name: str) -> str:
    return make_arn(ctx.region, ctx.account_id, "model", name)


def create_model(ctx: RequestContext, params: dict) -> SageMakerModel:
    requests.check_create_model(params)
    request = {key: value for key, value in params.items() if key != "Tags"}
    if "ModelPackageName" in requests.model_container(request):
        request = _with_package_container(ctx, request)
    return _create(ctx, SageMakerModel, params["ModelName"], request, params.get("Tags", []))


def _with_package_container(ctx: RequestContext, request: dict) -> dict:
    """The request with its container completed from the model package it names: the package's
    image, model data and hostname, its Environment under the request's. The model keeps them, so
    deleting or updating the package later changes nothing it runs; the completed request goes
    through the tenancy rule as if the caller had written it."""
    given = requests.model_container(request)
    package = inference_container(ctx, given["ModelPackageName"])
    container = {member: package[member] for member in PACKAGE_CONTAINER_MEMBERS if member in package}
    container.update(given)
    container["Environment"] = {**package.get("Environment", {}), **given.get("Environment", {})}
    requests.check_package_container(container)
    member = "PrimaryContainer" if "PrimaryContainer" in request else "Containers"
    completed = {**request, member: container if member == "PrimaryContainer" else [container]}
    s3_tenancy.refuse_foreign_locations(ctx, "sagemaker", "CreateModel", completed)
    return completed


# What a model package's container gives the model's (the rest of it describes the package).
PACKAGE_CONTAINER_MEMBERS = (
    "ContainerHostname", "Image", "ModelDataUrl", "ModelDataSource", "AdditionalModelDataSources"
)


# Per creatable kind: its ARN resource type and its noun in SageMaker's messages.
_KINDS = {SageMakerModel: ("model", "model"), EndpointConfig: ("endpoint-config", "endpoint configuration")}


def _create(ctx: RequestContext, model, name: str, request: dict, tags: list):
    """A model or endpoint config row; SageMaker's error when the name is taken (in any case)."""
    resource_type, noun = _KINDS[model]
    arn = make_arn(ctx.region, ctx.account_id, resource_type, name)
    prefix = resource_type.replace("-", "_")  # model_name / endpoint_config_name columns
    try:
        with transaction.atomic():
            return model.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                request=request,
                tags=tags,
                creation_time=timezone.now(),
                **{f"{prefix}_name": name, f"{prefix}_arn": arn},
            )
    except IntegrityError:
        raise _already_exists(noun, arn) from None


def get_model(ctx: RequestContext, name: str) -> SageMakerModel:
    arn = model_arn(ctx, name)
    model = _scoped(SageMakerModel, ctx).filter(model_arn=arn).first()
    if model is None:
        raise ValidationException(f'Could not find model "{arn}".')
    return model


def delete_model(ctx: RequestContext, name: str) -> None:
    """Allowed while endpoints use the model: they run a snapshot of it."""
    get_model(ctx, name).delete()


# --- Endpoint configs ------------------------------------------------------------------------


def create_endpoint_config(ctx: RequestContext, params: dict) -> EndpointConfig:
    requests.check_create_endpoint_config(params)
    for variant in params["ProductionVariants"]:
        if "ModelName" in variant:  # SageMaker refuses a config naming a missing model
            model = get_model(ctx, variant["ModelName"])
            if problems := serverless.model_problems(variant, model.request):
                raise ValidationException(" ".join(problems))
    request = requests.config_with_defaults(params)
    name = params["EndpointConfigName"]
    return _create(ctx, EndpointConfig, name, request, params.get("Tags", []))


def get_endpoint_config(ctx: RequestContext, name: str) -> EndpointConfig:
    arn = make_arn(ctx.region, ctx.account_id, "endpoint-config", name)
    config = _scoped(EndpointConfig, ctx).filter(endpoint_config_arn=arn).first()
    if config is None:
        # SageMaker names the ARN (amazon-sagemaker-examples issues: `Could not find endpoint
        # configuration "arn:aws:sagemaker:…"` from DescribeEndpointConfig).
        raise ValidationException(f'Could not find endpoint configuration "{arn}".')
    return config


def delete_endpoint_config(ctx: RequestContext, name: str) -> None:
    """Allowed while endpoints use the config: they run a snapshot of it."""
    get_endpoint_config(ctx, name).delete()


# --- Endpoints -------------------------------------------------------------------------------


def endpoint_arn(ctx: RequestContext, name: str) -> str:
    return make_arn(ctx.region, ctx.account_id, "endpoint", name)


def get_endpoint(ctx: RequestContext, name: str) -> Endpoint:
    arn = endpoint_arn(ctx, name)
    endpoint = _scoped(Endpoint, ctx).filter(endpoint_arn=arn).first()
    if endpoint is None:
        raise _no_endpoint(arn)
    return endpoint


def _no_endpoint(arn: str) -> ValidationException:
    # SageMaker names the ARN: `Could not find endpoint "arn:aws:sagemaker:us-west-2:…:endpoint/…".`
    # (DeleteEndpoint, amazon-sagemaker-examples issue 2402).
    return ValidationException(f'Could not find endpoint "{arn}".')


def create_endpoint(ctx: RequestContext, params: dict) -> Endpoint:
    requests.check_deployment_config(params.get("DeploymentConfig"))
    config = get_endpoint_config(ctx, params["EndpointConfigName"])
    snapshot = _snapshot(ctx, config)
    name = params["EndpointName"]
    arn = endpoint_arn(ctx, name)
    now = timezone.now()
    try:
        with transaction.atomic():
            endpoint = Endpoint.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                endpoint_name=name,
                endpoint_arn=arn,
                endpoint_config_name=config.endpoint_config_name,
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
                last_deployment_config=params.get("DeploymentConfig"),
                next_check_at=now,
            )
            _add_deployment(endpoint, config, snapshot, _initial_desired(config), {}, "CreateEndpoint")
    except IntegrityError:
        raise _already_exists("endpoint", arn) from None
    return endpoint


def update_endpoint(ctx: RequestContext, params: dict) -> Endpoint:
    """Start a blue/green deployment of another config; the worker shifts traffic and retires
    the old fleet, or rolls back to it."""
    requests.check_deployment_config(params.get("DeploymentConfig"))
    config = get_endpoint_config(ctx, params["EndpointConfigName"])
    snapshot = _snapshot(ctx, config)
    with transaction.atomic():
        endpoint = _endpoint_for_change(ctx, params["EndpointName"])
        active = _active_deployment(endpoint)
        serverless.check_conversion(active.snapshot["EndpointConfig"], config.request)
        desired = _initial_desired(config)
        if params.get("RetainAllVariantProperties"):
            excluded = {
                item["VariantPropertyType"] for item in params.get("ExcludeRetainedVariantProperties", [])
            }
            desired = _retained(desired, active.desired, excluded)
        rollout = _rollout_config(endpoint, params)
        written = {"last_deployment_config": rollout} if "DeploymentConfig" in params else {}
        updating = {"failure_reason": "", "next_check_at": timezone.now(), **written}
        if not t.move_endpoint(endpoint, EndpointStatus.UPDATING, **updating):
            raise _in_progress(endpoint)
        traffic = rollout.get("BlueGreenUpdatePolicy", {}).get("TrafficRoutingConfiguration", {})
        how = f"UpdateEndpoint, blue/green {traffic.get('Type', 'ALL_AT_ONCE')}"
        _add_deployment(endpoint, config, snapshot, desired, rollout, how)
    return endpoint


def _rollout_config(endpoint: Endpoint, params: dict) -> dict:
    """The DeploymentConfig an update rolls out with: the one given; else the last one when
    RetainDeploymentConfig is true; else SageMaker's default ({}: all at once)."""
    if "DeploymentConfig" in params:
        return params["DeploymentConfig"]
    if params.get("RetainDeploymentConfig"):
        return endpoint.last_deployment_config or {}
    return {}


def update_weights_and_capacities(ctx: RequestContext, params: dict) -> Endpoint:
    with transaction.atomic():
        endpoint = _endpoint_for_change(ctx, params["EndpointName"])
        active = _active_deployment(endpoint)
        changes = params["DesiredWeightsAndCapacities"]
        requests.check_weights_and_capacities(changes, active.desired, endpoint.endpoint_name)
        desired = {name: dict(values) for name, values in active.desired.items()}
        for change in changes:
            for member in ("DesiredWeight", "DesiredInstanceCount"):
                if member in change:
                    desired[change["VariantName"]][member] = change[member]
            if "ServerlessUpdateConfig" in change:
                name = change["VariantName"]
                desired[name] = serverless.apply_update(desired[name], change["ServerlessUpdateConfig"])
        if not t.move_endpoint(
            endpoint, EndpointStatus.UPDATING, failure_reason="", next_check_at=timezone.now()
        ):
            raise _in_progress(endpoint)
        EndpointDeployment.objects.filter(pk=active.pk).update(desired=desired)
        history.record(
            endpoint,
            DeploymentEventKind.WEIGHTS_AND_CAPACITIES_UPDATED,
            active.endpoint_config_name,
            _changes(active.desired, desired),
        )
        routing.announce_change()  # new weights apply at once
        transaction.on_commit(lambda: _nudge(endpoint))
    return endpoint


def _changes(before: dict, after: dict) -> str:
    """What UpdateEndpointWeightsAndCapacities changed, variant by variant, in words."""
    said = []
    for name, values in after.items():
        for member, noun in (("DesiredWeight", "weight"), ("DesiredInstanceCount", "instances"),
                             (serverless.CONFIG_KEY, "serverless config")):
            if values.get(member) != before[name].get(member):
                said.append(f"{name} {noun} {before[name].get(member)} → {values.get(member)}")
    return "; ".join(said) or "Weights and instance counts unchanged"


def delete_endpoint(ctx: RequestContext, name: str) -> None:
    with transaction.atomic():
        endpoint = _locked_endpoint(ctx, name)
        if endpoint.endpoint_status == EndpointStatus.DELETING:
            return
        if endpoint.endpoint_status not in (EndpointStatus.IN_SERVICE, EndpointStatus.FAILED):
            raise _in_progress(endpoint)
        refuse_if_hosting_components(endpoint)
        if not t.move_endpoint(endpoint, EndpointStatus.DELETING, next_check_at=timezone.now()):
            raise _in_progress(endpoint)
        routing.announce_change()
        transaction.on_commit(lambda: _nudge(endpoint))


def refuse_if_hosting_components(endpoint: Endpoint) -> None:
    """DeleteEndpoint refuses an endpoint that still hosts inference components."""
    names = list(endpoint.inference_components.values_list("inference_component_name", flat=True)[:5])
    if names:
        raise ValidationException(
            f'Endpoint "{endpoint.endpoint_arn}" still hosts inference components ({", ".join(names)}): '
            "delete them first."
        )


def _nudge(endpoint: Endpoint) -> None:
    """Ask a worker to look at the endpoint now. The change is already committed: when the broker
    cannot take the message, the sweeper finds the endpoint overdue, so the request succeeds."""
    try:
        hosting_tasks.enqueue(endpoint.pk)
    except OperationalError as exc:
        log.warning("could not enqueue endpoint %s (%s); the sweeper will pick it up", endpoint.pk, exc)


def _locked_endpoint(ctx: RequestContext, name: str) -> Endpoint:
    """The endpoint, locked for the current transaction."""
    arn = endpoint_arn(ctx, name)
    endpoint = _scoped(Endpoint, ctx).select_for_update().filter(endpoint_arn=arn).first()
    if endpoint is None:
        raise _no_endpoint(arn)
    return endpoint


def _endpoint_for_change(ctx: RequestContext, name: str) -> Endpoint:
    """The endpoint, locked, if it is InService (the only state that accepts an update)."""
    endpoint = _locked_endpoint(ctx, name)
    if endpoint.endpoint_status != EndpointStatus.IN_SERVICE:
        raise _in_progress(endpoint)
    return endpoint


def _in_progress(endpoint: Endpoint) -> ValidationException:
    if endpoint.endpoint_status == EndpointStatus.FAILED:
        return ValidationException(
            f'Cannot update endpoint "{endpoint.endpoint_arn}" in status Failed: '
            "delete it and create it again."
        )
    return ValidationException(f'Cannot update in-progress endpoint "{endpoint.endpoint_arn}".')


def _active_deployment(endpoint: Endpoint) -> EndpointDeployment:
    return endpoint.deployments.get(phase=DeploymentPhase.ACTIVE)


def _snapshot(ctx: RequestContext, config: EndpointConfig) -> dict:
    """What a deployment runs: the config and its models as they are now."""
    models = {}
    for variant in config.request["ProductionVariants"]:
        if "ModelName" in variant:  # none: an endpoint for inference components
            models[variant["ModelName"]] = get_model(ctx, variant["ModelName"]).request
    return {"EndpointConfig": config.request, "Models": models}


def _initial_desired(config: EndpointConfig) -> dict:
    variants = config.request["ProductionVariants"]
    return {variant["VariantName"]: serverless.initial_desired(variant) for variant in variants}


def _retained(desired: dict, current: dict, excluded: set[str]) -> dict:
    """RetainAllVariantProperties: variants that exist now keep their current weight and count,
    except the properties listed in ExcludeRetainedVariantProperties."""
    retained = {}
    for name, values in desired.items():
        kept = dict(values)
        for member in ("DesiredWeight", "DesiredInstanceCount"):
            if name in current and member not in excluded:
                kept[member] = current[name][member]
        retained[name] = kept
    return retained


def _add_deployment(
    endpoint: Endpoint,
    config: EndpointConfig,
    snapshot: dict,
    desired: dict,
    deployment_config: dict,
    operation: str,
) -> EndpointDeployment:
    now = timezone.now()
    deployment = EndpointDeployment.objects.create(
        endpoint=endpoint,
        endpoint_config_name=config.endpoint_config_name,
        snapshot=snapshot,
        desired=desired,
        deployment_config=deployment_config,
        created_at=now,
        phase_changed_at=now,
    )
    fleet = f"{operation}: {_fleet(config, desired)}"
    history.record(endpoint, DeploymentEventKind.FLEET_CREATED, config.endpoint_config_name, fleet)
    transaction.on_commit(lambda: _nudge(endpoint))
    return deployment


def _fleet(config: EndpointConfig, desired: dict) -> str:
    """A fleet in words: `AllTraffic 2 × ml.m5.large (weight 1.0)` per variant."""
    variants = config.request["ProductionVariants"]
    by_name = {variant["VariantName"]: variant for variant in variants}
    return "; ".join(
        f"{name} {serverless.fleet_words(by_name[name], values)} (weight {values['DesiredWeight']})"
        for name, values in desired.items()
    )


# --- Listing ---------------------------------------------------------------------------------

def listing(
    ctx: RequestContext,
    operation: str,
    model,
    params: dict,
    sort_fields: dict[str, str],
    name_field: str,
    status_field: str = "",
):
    """The ordered queryset the List* `operation` pages through."""
    return filtered_and_sorted(
        _scoped(model, ctx),
        params,
        operation=operation,
        name_field=name_field,
        sort_fields=sort_fields,
        status_field=status_field,
    )
