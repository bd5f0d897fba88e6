"""Resources are addressed by their SageMaker names (console/addresses.py): each kind's address
names one row; an operator's unscoped address of a name several accounts use lists them; an old
id address redirects when the viewer may see the row and is the same 404 as a missing one when
not; an address that no name could have is a 404, never a 500."""

import json
import re

import pytest
from django.http import Http404
from django.test import override_settings
from django.urls import resolve as resolve_path

from clusters.models import Cluster
from console.addresses import Ambiguous, address, resolve
from console.viewer import Viewer
from elastic.models import HyperPodJob
from hosting import services as hosting_services
from modelregistry import services as registry_services
from pipelines import services as pipeline_services
from processing import services as processing_services
from tests.unit.clusters.helpers import call, group
from tests.unit.console.conftest import (
    ACCOUNT_A,
    ACCOUNT_B,
    REGION,
    ctx,
    in_service_endpoint,
    make_job,
    operator,
    signed_in,
)
from tests.unit.console.test_processing_pages import processing_request
from tests.unit.console.test_tuning_pages import tuning_request
from tests.unit.elastic.fakes import manifest, submit
from training.models import TrainingJob
from tuning import services as tuning_services

OPERATOR = Viewer(account_id=None, principal="console-operator:ops")
OWNER = Viewer(account_id=ACCOUNT_A, principal="AKIATEST")
SCOPE = f"/console/accounts/{ACCOUNT_A}/{REGION}"
CONTAINER = {"Image": "serve:latest"}


def _model(name: str):
    role = f"arn:aws:iam::{ACCOUNT_A}:role/r"
    return hosting_services.create_model(
        ctx(ACCOUNT_A), {"ModelName": name, "PrimaryContainer": CONTAINER, "ExecutionRoleArn": role}
    )


def _config(name: str):
    _model("for-config")
    variant = {"VariantName": "A", "ModelName": "for-config", "InstanceType": "ml.m5.large",
               "InitialInstanceCount": 1}
    return hosting_services.create_endpoint_config(
        ctx(ACCOUNT_A), {"EndpointConfigName": name, "ProductionVariants": [variant]}
    )


def _execution(monkeypatch):
    monkeypatch.setattr("pipelines.services.nudge", lambda execution_id: None)
    steps = [{"Name": "Only", "Type": "Fail", "Arguments": {}}]
    pipeline_services.create_pipeline(ctx(ACCOUNT_A), {
        "PipelineName": "flow",
        "PipelineDefinition": json.dumps({"Version": "2020-12-01", "Parameters": [], "Steps": steps}),
        "RoleArn": f"arn:aws:iam::{ACCOUNT_A}:role/r",
    })
    started = {"PipelineName": "flow", "ClientRequestToken": "t" * 32}
    return pipeline_services.start_execution(ctx(ACCOUNT_A), started)


def _package():
    registry_services.create_group(ctx(ACCOUNT_A), {"ModelPackageGroupName": "churn"})
    spec = {"Containers": [CONTAINER]}
    return registry_services.create_package(
        ctx(ACCOUNT_A), {"ModelPackageGroupName": "churn", "InferenceSpecification": spec}
    )


def _unversioned_package():
    spec = {"Containers": [CONTAINER]}
    return registry_services.create_package(
        ctx(ACCOUNT_A), {"ModelPackageName": "loose", "InferenceSpecification": spec}
    )


def _cluster():
    call("CreateCluster", ctx(ACCOUNT_A), ClusterName="trainers", InstanceGroups=[group(count=1)])
    return Cluster.objects.get(cluster_name="trainers")


def _endpoint():
    return in_service_endpoint(ACCOUNT_A).endpoint


# (what makes the row, its page's URL name, its address for its account)
KINDS = {
    "training job": (
        lambda mp: make_job(ACCOUNT_A, "train-1"), "console:training-job", "training-jobs/train-1/"
    ),
    "processing job": (
        lambda mp: processing_services.create_processing_job(ctx(ACCOUNT_A), processing_request("prep-1")),
        "console:processing-job",
        "processing-jobs/prep-1/",
    ),
    "tuning job": (
        lambda mp: tuning_services.create_tuning_job(ctx(ACCOUNT_A), tuning_request("search-1")),
        "console:tuning-job",
        "tuning-jobs/search-1/",
    ),
    "model": (lambda mp: _model("m-1"), "console:model", "models/m-1/"),
    "endpoint config": (lambda mp: _config("c-1"), "console:endpoint-config", "endpoint-configs/c-1/"),
    "endpoint": (lambda mp: _endpoint(), "console:endpoint", None),
    "pipeline execution": (_execution, "console:pipeline-execution", None),
    "model package group": (
        lambda mp: _package().group, "console:model-package-group", "model-package-groups/churn/"
    ),
    "model package": (lambda mp: _package(), "console:model-package", "model-packages/churn/1/"),
    "unversioned model package": (
        lambda mp: _unversioned_package(), "console:model-package", "model-packages/loose/"
    ),
    "cluster": (lambda mp: _cluster(), "console:cluster", "hyperpod/clusters/trainers/"),
    "hyperpod job": (
        lambda mp: submit(manifest(name="llama"), account_id=ACCOUNT_A),
        "console:hyperpod-job",
        None,
    ),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_found_by_the_name_its_address_gives(db, monkeypatch, kind):
    make, page, expected = KINDS[kind]
    row = make(monkeypatch)

    own = address(OWNER, row, page)
    scoped = address(OPERATOR, row, page)

    if expected:
        assert own == f"/console/{expected}"
    assert scoped == SCOPE + own.removeprefix("/console")  # an operator's names the account
    for viewer in (OWNER, OPERATOR):
        match = resolve_path(scoped if viewer is OPERATOR else own)
        assert resolve(viewer, type(row), match.kwargs) == row
    assert signed_in(ACCOUNT_A).get(own).status_code == 200
    assert signed_in(ACCOUNT_B).get(own).status_code == 404
    assert signed_in(ACCOUNT_B).get(scoped).status_code == 404  # naming the account grants nothing


def test_the_special_addresses_name_what_the_arn_names(db, monkeypatch):
    execution = _execution(monkeypatch)
    job = submit(manifest(name="llama"), account_id=ACCOUNT_A)

    assert address(OWNER, execution, "console:pipeline-execution") == (
        f"/console/pipelines/flow/executions/{execution.execution_id}/"
    )
    assert address(OWNER, job, "console:hyperpod-job") == f"/console/hyperpod/jobs/{job.namespace}/llama/"
    assert address(OWNER, execution, "console:pipeline-execution-stop").endswith("/stop")


def test_a_name_is_found_in_any_case_as_sagemaker_finds_it(account_a):
    make_job(ACCOUNT_A, "Train-Mixed")

    assert account_a.get("/console/training-jobs/train-mixed/").status_code == 200


def test_an_operator_is_shown_the_candidates_of_a_name_two_accounts_use(db):
    mine, theirs = make_job(ACCOUNT_A, "shared"), make_job(ACCOUNT_B, "shared")
    make_job(ACCOUNT_B, "only-b")
    client = operator()

    response = client.get("/console/training-jobs/shared/")

    assert response.status_code == 300  # Multiple Choices: neither is picked
    page = response.content.decode()
    for row in (mine, theirs):
        scoped = f"/console/accounts/{row.account_id}/{REGION}/training-jobs/shared/"
        assert f'href="{scoped}"' in page
        assert client.get(scoped).context["job"] == row
    with pytest.raises(Ambiguous):
        resolve(OPERATOR, TrainingJob, {"name": "shared"})
    assert client.get("/console/training-jobs/only-b/").context["job"].account_id == ACCOUNT_B
    assert client.post("/console/training-jobs/shared/stop").status_code == 300  # nothing stopped
    assert TrainingJob.objects.get(pk=mine.pk).training_job_status == "InProgress"


def test_an_account_never_sees_another_accounts_row_of_the_same_name(db):
    make_job(ACCOUNT_A, "shared")
    theirs = make_job(ACCOUNT_B, "shared")

    page = signed_in(ACCOUNT_A).get("/console/training-jobs/shared/")

    assert page.status_code == 200 and page.context["job"].account_id == ACCOUNT_A
    scoped = f"/console/accounts/{ACCOUNT_B}/{REGION}/training-jobs/shared/"
    assert signed_in(ACCOUNT_A).get(scoped).status_code == 404
    assert signed_in(ACCOUNT_B).get(scoped).context["job"] == theirs


def test_an_old_id_address_redirects_to_the_name_for_its_viewer_only(db):
    job = make_job(ACCOUNT_A, "bookmarked")
    owner, other, ops = signed_in(ACCOUNT_A), signed_in(ACCOUNT_B), operator()

    assert owner.get(f"/console/training-jobs/{job.pk}/")["Location"] == "/console/training-jobs/bookmarked/"
    assert owner.get(f"/console/training-jobs/{job.pk}/live")["Location"] == (
        "/console/training-jobs/bookmarked/live"
    )
    assert ops.get(f"/console/training-jobs/{job.pk}/")["Location"] == f"{SCOPE}/training-jobs/bookmarked/"
    posted = owner.post(f"/console/training-jobs/{job.pk}/stop")
    assert posted.status_code == 307 and posted["Location"] == "/console/training-jobs/bookmarked/stop"
    missing = other.get(f"/console/training-jobs/{job.pk + 1000}/")
    foreign = other.get(f"/console/training-jobs/{job.pk}/")
    assert foreign.status_code == missing.status_code == 404
    assert _page(foreign) == _page(missing)  # another account's id tells nothing more


def _page(response) -> str:
    """The page without its CSRF token (a new one each time)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())


def test_a_name_of_digits_is_the_name_before_it_is_an_old_id(db):
    first = make_job(ACCOUNT_A, "first")
    digits = make_job(ACCOUNT_A, str(first.pk))

    response = signed_in(ACCOUNT_A).get(f"/console/training-jobs/{first.pk}/")

    assert response.status_code == 200 and response.context["job"] == digits


def test_old_execution_and_hyperpod_job_addresses_redirect(db, monkeypatch):
    execution = _execution(monkeypatch)
    job = submit(manifest(name="llama"), account_id=ACCOUNT_A)
    owner, other = signed_in(ACCOUNT_A), signed_in(ACCOUNT_B)

    assert owner.get(f"/console/pipeline-executions/{execution.pk}/")["Location"] == (
        f"/console/pipelines/flow/executions/{execution.execution_id}/"
    )
    assert owner.get(f"/console/hyperpod/jobs/{job.pk}/")["Location"] == (
        f"/console/hyperpod/jobs/{job.namespace}/llama/"
    )
    assert other.get(f"/console/pipeline-executions/{execution.pk}/").status_code == 404
    assert other.get(f"/console/hyperpod/jobs/{job.pk}/").status_code == 404
    assert HyperPodJob.objects.count() == 1


@pytest.mark.parametrize(
    "path",
    [
        "training-jobs/under_score/",
        "training-jobs/-leading-hyphen/",
        "training-jobs/trailing-hyphen-/",
        "training-jobs/" + "a" * 300 + "/",
        "training-jobs/caf%C3%A9/",
        "training-jobs/nul%00/",
        "training-jobs/dot.name/live",
        "model-packages/churn/1234567890/",
        "pipelines/flow/executions/x_y/",
        "accounts/12345/us-east-1/training-jobs/x/",
        "accounts/111111111111/US_EAST/training-jobs/x/",
        "pipeline-executions/abc/",
        "pipeline-executions/" + "9" * 30 + "/",
        "training-jobs/" + "9" * 30 + "/",
        "model-packages/" + "9" * 30 + "/",
    ],
)
def test_an_address_no_name_could_have_is_the_consoles_404(account_a, path):
    response = account_a.get(f"/console/{path}")

    assert response.status_code == 404
    assert "Not found" in response.content.decode()


def test_an_accounts_row_outside_the_stacks_region_is_addressed_with_its_region(db):
    job = make_job(ACCOUNT_A, "far")
    TrainingJob.objects.filter(pk=job.pk).update(region="eu-west-1")
    job.refresh_from_db()

    own = address(OWNER, job, "console:training-job")

    assert own == f"/console/accounts/{ACCOUNT_A}/eu-west-1/training-jobs/far/"
    assert signed_in(ACCOUNT_A).get(own).status_code == 200
    assert signed_in(ACCOUNT_A).get("/console/training-jobs/far/").status_code == 404  # not in us-east-1


@override_settings(SAGEPORT_REGION="eu-west-1")
def test_the_unscoped_address_is_the_stacks_region(db):
    job = make_job(ACCOUNT_A, "near")

    with pytest.raises(Http404):
        resolve(OWNER, TrainingJob, {"name": "near"})
    assert address(OWNER, job, "console:training-job") == f"{SCOPE}/training-jobs/near/"


def test_a_page_an_operator_opens_links_its_sub_routes_under_the_account(db):
    make_job(ACCOUNT_A, "watched")

    page = operator().get(f"{SCOPE}/training-jobs/watched/").content.decode()

    for sub_route in ("live", "logs", "metrics", "stop", "clone"):
        assert f'"{SCOPE}/training-jobs/watched/{sub_route}"' in page, sub_route
    own = signed_in(ACCOUNT_A).get("/console/training-jobs/watched/").content.decode()
    assert '"/console/training-jobs/watched/live"' in own and "/accounts/" not in own
