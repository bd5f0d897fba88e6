"""Delete on the pages of pipelines, model packages and their groups, inference components and
HyperPod clusters: the API's own Delete operation, its refusal shown on the page with nothing
changed, another account's resource absent, and never on a GET."""

import json

import pytest

from clusters.models import Cluster
from hosting.models import Endpoint, EndpointStatus, InferenceComponent
from modelregistry.models import ModelPackage, ModelPackageGroup
from pipelines import services as pipeline_services
from pipelines.models import Pipeline
from tests.unit.clusters.helpers import call, group
from tests.unit.console.conftest import ACCOUNT_A, ctx, operator
from tests.unit.console.test_registry_pages import _registered
from tests.unit.hosting.test_component_placement import component, parent  # noqa: F401  (fixture)

STEPS = [{"Name": "Only", "Type": "Fail", "Arguments": {"ErrorMessage": "stop here"}}]


@pytest.fixture
def pipeline(db, monkeypatch) -> Pipeline:
    monkeypatch.setattr("pipelines.services.nudge", lambda execution_id: None)
    definition = json.dumps({"Version": "2020-12-01", "Parameters": [], "Steps": STEPS})
    return pipeline_services.create_pipeline(
        ctx(ACCOUNT_A),
        {
            "PipelineName": "flow",
            "PipelineDefinition": definition,
            "RoleArn": f"arn:aws:iam::{ACCOUNT_A}:role/r",
        },
    )


def test_a_pipeline_with_a_running_execution_is_refused_then_deleted_once_it_ends(account_a, pipeline):
    execution = pipeline_services.start_execution(
        ctx(ACCOUNT_A), {"PipelineName": "flow", "ClientRequestToken": "t" * 32}
    )
    page = account_a.get("/console/pipelines/flow/").content.decode()
    assert 'action="/console/pipelines/flow/delete"' in page

    refused = account_a.post("/console/pipelines/flow/delete", follow=True)
    assert refused.redirect_chain[-1][0] == "/console/pipelines/flow/"
    shown = refused.content.decode()
    assert "ConflictException" in shown and "has running executions" in shown
    assert Pipeline.objects.filter(pk=pipeline.pk).exists()

    type(execution).objects.filter(pk=execution.pk).update(status="Succeeded")
    deleted = account_a.post("/console/pipelines/flow/delete", follow=True)
    assert deleted.redirect_chain[-1][0] == "/console/pipelines/"
    assert "Deleted the pipeline flow" in deleted.content.decode()
    assert not Pipeline.objects.exists()


def test_a_pipeline_is_deleted_by_an_operator_at_its_accounts_address_only_on_post(pipeline, client):
    address = f"/console/accounts/{ACCOUNT_A}/us-east-1/pipelines/flow/delete"
    ops = operator(client)
    assert ops.get(address).status_code == 405
    assert Pipeline.objects.exists()

    assert ops.post(address).status_code == 302
    assert not Pipeline.objects.exists()


def test_a_group_holding_packages_is_refused_then_deleted_once_they_are(account_a):
    group, package = _registered()
    page = account_a.get("/console/model-packages/churn/1/").content.decode()
    assert 'action="/console/model-packages/churn/1/delete"' in page

    group_page = account_a.get("/console/model-package-groups/churn/").content.decode()
    assert 'action="/console/model-package-groups/churn/delete"' in group_page
    refused = account_a.post("/console/model-package-groups/churn/delete", follow=True)
    assert refused.redirect_chain[-1][0] == "/console/model-package-groups/churn/"
    assert "ConflictException" in refused.content.decode() and "delete them first" in refused.content.decode()
    assert ModelPackageGroup.objects.filter(pk=group.pk).exists()

    gone_package = account_a.post("/console/model-packages/churn/1/delete", follow=True)
    assert gone_package.redirect_chain[-1][0] == "/console/model-packages/"
    assert f"Deleted {package.model_package_arn}" in gone_package.content.decode()
    gone_group = account_a.post("/console/model-package-groups/churn/delete", follow=True)
    assert gone_group.redirect_chain[-1][0] == "/console/model-package-groups/"
    assert "Deleted the model package group churn" in gone_group.content.decode()
    assert not ModelPackage.objects.exists() and not ModelPackageGroup.objects.exists()


def test_another_accounts_registry_is_not_found_and_a_get_deletes_nothing(account_a, account_b):
    _registered()
    for address in ("/console/model-packages/churn/1/delete", "/console/model-package-groups/churn/delete"):
        assert account_b.post(address).status_code == 404, address
        assert account_a.get(address).status_code == 405, address
    assert ModelPackage.objects.exists() and ModelPackageGroup.objects.exists()


def _component_of_a(parent_endpoint: Endpoint, runner_status: str) -> InferenceComponent:
    """The fixture's component and endpoints moved into account A, ARNs included (the API finds a
    component by its ARN)."""
    runner = component(parent_endpoint, accelerators=0).endpoint
    Endpoint.objects.filter(pk=runner.pk).update(endpoint_status=runner_status)
    for model, arn in ((Endpoint, "endpoint_arn"), (InferenceComponent, "inference_component_arn")):
        for row in model.objects.all():
            setattr(row, arn, getattr(row, arn).replace(row.account_id, ACCOUNT_A))
            row.account_id = ACCOUNT_A
            row.save(update_fields=["account_id", arn])
    return InferenceComponent.objects.get()


def test_a_component_being_created_is_refused_and_an_in_service_one_deleted(account_a, parent):  # noqa: F811
    item = _component_of_a(parent, EndpointStatus.CREATING)
    page = f"/console/inference-components/{item.inference_component_name}/"
    assert f'action="{page}delete"' in account_a.get(page).content.decode()

    refused = account_a.post(f"{page}delete", follow=True)
    assert refused.redirect_chain[-1][0] == page
    assert "ValidationException: Cannot delete in-progress" in refused.content.decode()
    assert Endpoint.objects.get(pk=item.runner_id).endpoint_status == EndpointStatus.CREATING

    Endpoint.objects.filter(pk=item.runner_id).update(endpoint_status=EndpointStatus.IN_SERVICE)
    deleted = account_a.post(f"{page}delete", follow=True)
    assert deleted.redirect_chain[-1][0] == "/console/inference-components/"
    assert f"Deleting {item.inference_component_name}" in deleted.content.decode()
    assert Endpoint.objects.get(pk=item.runner_id).endpoint_status == EndpointStatus.DELETING


def test_another_accounts_component_is_not_found_and_a_get_deletes_nothing(account_a, account_b, parent):  # noqa: F811
    item = _component_of_a(parent, EndpointStatus.IN_SERVICE)
    address = f"/console/inference-components/{item.inference_component_name}/delete"

    assert account_b.post(address).status_code == 404
    assert account_a.get(address).status_code == 405
    assert Endpoint.objects.get(pk=item.runner_id).endpoint_status == EndpointStatus.IN_SERVICE


def test_a_cluster_is_deleted_by_its_account_only_and_only_on_post(account_a, account_b):
    call("CreateCluster", ctx(ACCOUNT_A), ClusterName="trainers", InstanceGroups=[group(count=1)])
    address = "/console/hyperpod/clusters/trainers/delete"
    assert f'action="{address}"' in account_a.get("/console/hyperpod/clusters/trainers/").content.decode()

    assert account_b.post(address).status_code == 404
    assert account_a.get(address).status_code == 405
    assert Cluster.objects.get().cluster_status != "Deleting"

    deleted = account_a.post(address, follow=True)
    assert deleted.redirect_chain[-1][0] == "/console/hyperpod/"
    assert "Deleting the cluster trainers" in deleted.content.decode()
    assert Cluster.objects.get().cluster_status == "Deleting"
