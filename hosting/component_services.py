"""Inference components' operations: create, describe, list, update (blue/green), copy counts,
delete. A component is its row and its runner endpoint (hosting/components.py): every change
records intent on the runner (a deployment, its desired copies, its status) and enqueues the
runner's reconcile, as the endpoint operations do."""

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from accounts import s3_tenancy
from hosting import component_requests, components, history, services
from hosting import transitions as t
from hosting.models import (
    DeploymentEventKind,
    DeploymentPhase,
    Endpoint,
    EndpointDeployment,
    EndpointStatus,
    InferenceComponent,
)
from hosting.runtime_api import routing
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ValidationException
from protocol.listing import filtered_and_sorted

NOUN = "inference component"


def component_arn(ctx: RequestContext, name: str) -> str:
    return make_arn(ctx.region, ctx.account_id, components.RESOURCE_TYPE, name)


def get(ctx: RequestContext, name: str) -> InferenceComponent:
    arn = component_arn(ctx, name)
    found = InferenceComponent.objects.filter(inference_component_arn=arn).select_related(
        "runner", "endpoint"
    )
    component = found.first()
    if component is None:
        raise ValidationException(f'Could not find inference component "{arn}".')
    return component


# --- Create ----------------------------------------------------------------------------------


def create(ctx: RequestContext, params: dict) -> InferenceComponent:
    component_requests.check_request(params)
    for member in ("VariantName", "Specification", "RuntimeConfig"):
        if member not in params:
            raise ValidationException(f"{member} is required.")
    parent = _component_endpoint(ctx, params["EndpointName"], params["VariantName"])
    instance_type = _parent_variant(parent, params["VariantName"])["InstanceType"]
    component_requests.check_request(params, instance_type)
    snapshot = _snapshot(ctx, parent, params["VariantName"], params["Specification"])
    name, arn, now = (
        params["InferenceComponentName"],
        component_arn(ctx, params["InferenceComponentName"]),
        timezone.now(),
    )
    copies = params["RuntimeConfig"]["CopyCount"]
    try:
        with transaction.atomic():
            runner = Endpoint.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                endpoint_name=name,
                endpoint_arn=arn,
                endpoint_config_name=name,
                creation_time=now,
                last_modified_time=now,
                next_check_at=now,
            )
            component = InferenceComponent.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                inference_component_name=name,
                inference_component_arn=arn,
                endpoint=parent,
                variant_name=params["VariantName"],
                runner=runner,
                specification=params["Specification"],
                tags=params.get("Tags", []),
                creation_time=now,
            )
            _add_deployment(component, snapshot, copies, "CreateInferenceComponent")
    except IntegrityError:
        raise ValidationException(f'Cannot create already existing {NOUN} "{arn}".') from None
    return component


def _component_endpoint(ctx: RequestContext, endpoint_name: str, variant_name: str) -> Endpoint:
    """The endpoint a component goes on: InService, made for components, with that variant."""
    parent = services.get_endpoint(ctx, endpoint_name)
    if parent.endpoint_status != EndpointStatus.IN_SERVICE:
        raise ValidationException(
            f'Endpoint "{parent.endpoint_arn}" is in status {parent.endpoint_status}: inference '
            "components can be created on an InService endpoint only."
        )
    active = parent.deployments.filter(phase=DeploymentPhase.ACTIVE).first()
    if active is None or not components.is_component_config(active.snapshot["EndpointConfig"]):
        raise ValidationException(
            f'Endpoint "{parent.endpoint_arn}" runs models: inference components need an endpoint '
            "whose configuration's variants name no model."
        )
    if variant_name not in active.desired:
        raise ValidationException(f'The variant {variant_name} does not exist in endpoint "{endpoint_name}".')
    return parent


def _parent_variant(parent: Endpoint, variant_name: str) -> dict:
    active = parent.deployments.get(phase=DeploymentPhase.ACTIVE)
    variants = active.snapshot["EndpointConfig"]["ProductionVariants"]
    return next(variant for variant in variants if variant["VariantName"] == variant_name)


def _snapshot(ctx: RequestContext, parent: Endpoint, variant_name: str, specification: dict) -> dict:
    """What the runner's next deployment runs: the component's model as it is now (a named model's
    request, or one made of its Container with the endpoint config's ExecutionRoleArn), checked
    by the tenancy rule as a CreateModel request would be."""
    active = parent.deployments.get(phase=DeploymentPhase.ACTIVE)
    if "ModelName" in specification:
        model_name, model = (
            specification["ModelName"],
            services.get_model(ctx, specification["ModelName"]).request,
        )
    else:
        model_name = components.CONTAINER_MODEL
        model = {"PrimaryContainer": components.model_container_of(specification["Container"])}
        role = active.snapshot["EndpointConfig"].get("ExecutionRoleArn")
        if role:
            model["ExecutionRoleArn"] = role
        s3_tenancy.refuse_foreign_locations(
            ctx, "sagemaker", "CreateModel", {"ModelName": model_name, **model}
        )
    instance_type = _parent_variant(parent, variant_name)["InstanceType"]
    variant = components.runner_variant(specification, variant_name, instance_type, 1)
    return {"EndpointConfig": {"ProductionVariants": [variant]}, "Models": {model_name: model}}


def _add_deployment(component: InferenceComponent, snapshot: dict, copies: int, operation: str) -> None:
    now = timezone.now()
    EndpointDeployment.objects.create(
        endpoint=component.runner,
        endpoint_config_name=component.inference_component_name,
        snapshot=snapshot,
        desired={component.variant_name: {"DesiredWeight": 1.0, "DesiredInstanceCount": copies}},
        created_at=now,
        phase_changed_at=now,
    )
    message = f"{operation}: {copies} cop{'ies' if copies > 1 else 'y'} on {component.endpoint.endpoint_name}"
    history.record(
        component.runner, DeploymentEventKind.FLEET_CREATED, component.inference_component_name, message
    )
    transaction.on_commit(lambda: services._nudge(component.runner))


# --- Updates ---------------------------------------------------------------------------------


def _for_change(ctx: RequestContext, name: str) -> InferenceComponent:
    """The component, its runner locked, if it is InService (the only state that accepts a change)."""
    component = get(ctx, name)
    runner = Endpoint.objects.select_for_update().get(pk=component.runner_id)
    if runner.endpoint_status != EndpointStatus.IN_SERVICE:
        raise ValidationException(
            f'Cannot update {NOUN} "{component.inference_component_arn}" in status {runner.endpoint_status}.'
        )
    component.runner = runner
    return component


def update(ctx: RequestContext, params: dict) -> InferenceComponent:
    """A new Specification is a blue/green deployment of new copies (all of them healthy before
    the old ones are drained); RuntimeConfig alone changes the copy count."""
    component_requests.check_request(params)
    with transaction.atomic():
        component = _for_change(ctx, params["InferenceComponentName"])
        active = component.runner.deployments.get(phase=DeploymentPhase.ACTIVE)
        copies = params.get("RuntimeConfig", {}).get(
            "CopyCount", active.desired[component.variant_name]["DesiredInstanceCount"]
        )
        if "Specification" not in params:
            return _set_copies(component, active, copies)
        instance_type = _parent_variant(component.endpoint, component.variant_name)["InstanceType"]
        component_requests.check_request(params, instance_type)
        snapshot = _snapshot(ctx, component.endpoint, component.variant_name, params["Specification"])
        if not t.move_endpoint(component.runner, EndpointStatus.UPDATING, failure_reason=""):
            raise ValidationException(
                f'Cannot update in-progress {NOUN} "{component.inference_component_arn}".'
            )
        InferenceComponent.objects.filter(pk=component.pk).update(specification=params["Specification"])
        _add_deployment(component, snapshot, copies, "UpdateInferenceComponent, blue/green ALL_AT_ONCE")
    return component


def update_runtime_config(ctx: RequestContext, params: dict) -> InferenceComponent:
    copies = params["DesiredRuntimeConfig"]["CopyCount"]
    if copies < 1:
        raise ValidationException("DesiredRuntimeConfig.CopyCount must be at least 1.")
    with transaction.atomic():
        component = _for_change(ctx, params["InferenceComponentName"])
        active = component.runner.deployments.get(phase=DeploymentPhase.ACTIVE)
        return _set_copies(component, active, copies)


def _set_copies(component: InferenceComponent, active: EndpointDeployment, copies: int) -> InferenceComponent:
    runner = component.runner
    if not t.move_endpoint(runner, EndpointStatus.UPDATING, failure_reason="", next_check_at=timezone.now()):
        raise ValidationException(f'Cannot update in-progress {NOUN} "{component.inference_component_arn}".')
    before = active.desired[component.variant_name]["DesiredInstanceCount"]
    desired = {component.variant_name: {"DesiredWeight": 1.0, "DesiredInstanceCount": copies}}
    EndpointDeployment.objects.filter(pk=active.pk).update(desired=desired)
    message = f"Copies {before} → {copies}"
    history.record(
        runner, DeploymentEventKind.WEIGHTS_AND_CAPACITIES_UPDATED, active.endpoint_config_name, message
    )
    transaction.on_commit(lambda: services._nudge(runner))
    return component


def delete(ctx: RequestContext, name: str) -> None:
    """The runner drains and stops the copies, then goes, and the component row with it."""
    with transaction.atomic():
        component = get(ctx, name)
        runner = Endpoint.objects.select_for_update().get(pk=component.runner_id)
        if runner.endpoint_status == EndpointStatus.DELETING:
            return
        if runner.endpoint_status not in (EndpointStatus.IN_SERVICE, EndpointStatus.FAILED):
            raise ValidationException(
                f'Cannot delete in-progress {NOUN} "{component.inference_component_arn}".'
            )
        t.move_endpoint(runner, EndpointStatus.DELETING, next_check_at=timezone.now())
        routing.announce_change()
        transaction.on_commit(lambda: services._nudge(runner))


# --- Listing ---------------------------------------------------------------------------------

SORT_FIELDS = {"Name": "inference_component_name", "CreationTime": "creation_time", "Status": "status"}


def listing(ctx: RequestContext, params: dict):
    rows = InferenceComponent.objects.filter(account_id=ctx.account_id, region=ctx.region).annotate(
        last_modified_time=F("runner__last_modified_time"), status=F("runner__endpoint_status")
    )
    if "EndpointNameEquals" in params:
        rows = rows.filter(endpoint__endpoint_name=params["EndpointNameEquals"])
    if "VariantNameEquals" in params:
        rows = rows.filter(variant_name=params["VariantNameEquals"])
    return filtered_and_sorted(
        rows.select_related("runner", "endpoint"),
        params,
        operation="ListInferenceComponents",
        name_field="inference_component_name",
        sort_fields=SORT_FIELDS,
        status_field="status",
    )
