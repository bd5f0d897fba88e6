"""The inference component pages: the list, a component's page with its copies, and the
endpoint list, where a component's runner never shows."""

from hosting import component_placement
from hosting.models import Endpoint, InferenceComponent
from tests.unit.console.conftest import ACCOUNT_A
from tests.unit.hosting.test_component_placement import component, parent  # noqa: F401  (fixture)
from tests.unit.training.test_scheduler import make_node


def test_the_list_and_the_page_show_the_component_and_its_copies(account_a, parent):  # noqa: F811
    make_node(gpus=0)
    runner_deployment = component(parent, accelerators=0)
    assert component_placement.add_copies(runner_deployment, "AllTraffic", range(1, 2))
    Endpoint.objects.update(account_id=ACCOUNT_A)
    InferenceComponent.objects.update(account_id=ACCOUNT_A)
    item = InferenceComponent.objects.get()
    copy = runner_deployment.containers.get()

    listing = account_a.get("/console/inference-components/").content.decode()
    page = account_a.get(f"/console/inference-components/{item.inference_component_name}/").content.decode()
    endpoints = account_a.get("/console/endpoints/").content.decode()

    assert item.inference_component_name in listing and "parent" in listing
    assert copy.name in page and "DescribeInferenceComponent" in page
    assert "parent" in endpoints and item.inference_component_name not in endpoints


def test_another_accounts_component_is_not_found(account_a, parent):  # noqa: F811
    component(parent, accelerators=0)  # the parent's account, not A's
    item = InferenceComponent.objects.get()

    assert account_a.get(f"/console/inference-components/{item.inference_component_name}/").status_code == 404
