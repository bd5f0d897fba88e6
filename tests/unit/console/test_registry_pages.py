"""The model registry's pages: groups with their versions and packages with what
DescribeModelPackage answers, for their account only; Approve is the API's UpdateModelPackage."""

from modelregistry import services
from modelregistry.models import ModelPackage
from tests.unit.console.conftest import ACCOUNT_A, ctx

SPEC = {"Containers": [{"Image": "serve:registered"}]}


def _registered():
    group = services.create_group(ctx(ACCOUNT_A), {"ModelPackageGroupName": "churn"})
    package = services.create_package(
        ctx(ACCOUNT_A), {"ModelPackageGroupName": "churn", "InferenceSpecification": SPEC}
    )
    return group, package


def test_registry_pages_render_for_their_account(account_a):
    group, package = _registered()
    pages = {
        "/console/model-package-groups/": "churn",
        f"/console/model-package-groups/{group.model_package_group_name}/": "serve:registered",
        "/console/model-packages/": "PendingManualApproval",
        "/console/model-packages/churn/1/": package.model_package_arn,
    }
    for url, shown in pages.items():
        response = account_a.get(url)
        assert response.status_code == 200, url
        assert shown in response.content.decode(), url


def test_registry_pages_are_absent_for_another_account(account_b):
    group, package = _registered()
    for url in ("/console/model-package-groups/churn/", "/console/model-packages/churn/1/"):
        assert account_b.get(url).status_code == 404
    assert "churn" not in account_b.get("/console/model-package-groups/").content.decode()


def test_approve_is_update_model_package(account_a):
    _, package = _registered()

    response = account_a.post("/console/model-packages/churn/1/approval", {"status": "Approved"})

    assert response.status_code == 302
    assert ModelPackage.objects.get(pk=package.pk).model_approval_status == "Approved"
    url = "/console/model-packages/churn/1/approval"
    refused = account_a.post(url, {"status": "Maybe"}, follow=True)
    assert "ValidationException" in refused.content.decode()
