"""What SageMaker says about a model, endpoint config or endpoint that does not exist: a
ValidationException naming the resource's ARN (its name lower-cased, as SageMaker's ARNs are)."""

import pytest

from protocol.errors import ValidationException
from tests.unit.clusters.helpers import CTX, call

ARN = f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}"


def _message(operation: str, **params) -> str:
    with pytest.raises(ValidationException) as raised:
        call(operation, **params)
    return raised.value.message


@pytest.mark.parametrize(
    ("operation", "params", "expected"),
    [
        # `Could not find model "arn:aws:sagemaker:…:model/…".` (DescribeModel, DeleteModel)
        ("DescribeModel", {"ModelName": "Gone"}, f'Could not find model "{ARN}:model/gone".'),
        ("DeleteModel", {"ModelName": "Gone"}, f'Could not find model "{ARN}:model/gone".'),
        # `Could not find endpoint configuration "arn:aws:sagemaker:…".` (DescribeEndpointConfig,
        # reported by users of amazon-sagemaker-examples)
        (
            "DescribeEndpointConfig",
            {"EndpointConfigName": "Gone"},
            f'Could not find endpoint configuration "{ARN}:endpoint-config/gone".',
        ),
        (
            "DeleteEndpointConfig",
            {"EndpointConfigName": "Gone"},
            f'Could not find endpoint configuration "{ARN}:endpoint-config/gone".',
        ),
        (
            "CreateEndpoint",
            {"EndpointName": "e", "EndpointConfigName": "Gone"},
            f'Could not find endpoint configuration "{ARN}:endpoint-config/gone".',
        ),
        # `Could not find endpoint "arn:aws:sagemaker:us-west-2:…:endpoint/ipinsights-…".`
        # (DeleteEndpoint, amazon-sagemaker-examples issue 2402)
        ("DescribeEndpoint", {"EndpointName": "Gone"}, f'Could not find endpoint "{ARN}:endpoint/gone".'),
        ("DeleteEndpoint", {"EndpointName": "Gone"}, f'Could not find endpoint "{ARN}:endpoint/gone".'),
        (
            "UpdateEndpointWeightsAndCapacities",
            {"EndpointName": "Gone", "DesiredWeightsAndCapacities": [{"VariantName": "v"}]},
            f'Could not find endpoint "{ARN}:endpoint/gone".',
        ),
    ],
)
def test_a_missing_resource_is_named_by_its_arn(db, operation, params, expected):
    assert _message(operation, **params) == expected
