"""docs/api.md "Not served, and not carried out" names the notable operations Sageport does not serve;
each must be an operation of the botocore model that answers 501 NotImplementedException naming
it (SageMaker's own unknown-operation answer would be a 400: the 501 says "real, not here")."""

import re
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from hosting.runtime_api import contract
from protocol import registry, shapes
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)

API_DOC = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def _listed() -> list[str]:
    section = API_DOC.read_text().split("## Not served, and not carried out", 1)[1]
    unserved = section.split("- **A feature of a served operation", 1)[0]
    return [name for name in re.findall(r"`([A-Z][A-Za-z0-9]+)`", unserved) if not name.endswith("Exception")]


LISTED = _listed()
RUNTIME = {operation for _, operation in contract.unserved_paths()}


def test_the_docs_list_the_notable_unserved_operations():
    assert {"CreateAutoMLJobV2", "PutModelPackageGroupPolicy"} <= set(LISTED)
    # Served: streaming on the data plane, async inference on both ports.
    assert not {"InvokeEndpointWithResponseStream", "InvokeEndpointAsync"} & set(LISTED)


@pytest.mark.parametrize("operation", sorted(set(LISTED) - RUNTIME))
def test_a_listed_sagemaker_operation_is_modelled_and_answers_501(make_client, operation):  # noqa: F811
    assert shapes.operation_model("sagemaker", operation) is not None
    assert registry.handler_for("SageMaker", operation) is None
    client, _ = make_client(parameter_validation=False)  # the refusal comes before validation
    with pytest.raises(ClientError) as raised:
        method = {api: method for method, api in client.meta.method_to_api_mapping.items()}[operation]
        getattr(client, method)()
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert error["Error"] == {
        "Code": "NotImplementedException", "Message": f"Sageport does not implement SageMaker.{operation}"
    }
