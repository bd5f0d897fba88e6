"""The hosting control-plane API through stock boto3: shapes, names and ARNs, tags, paging, and
bad requests answered with AWS's errors without changing anything."""

import json

import pytest
from botocore.exceptions import ClientError

from tests.e2e.hosting import unique

ACCOUNT_ARN = "arn:aws:sagemaker:us-east-1:123456789012"
IMAGE = "sageport-examples/python-serve:latest"  # never started by these tests


def _variant(model: str, **overrides) -> dict:
    return {
        "VariantName": "AllTraffic",
        "ModelName": model,
        "InitialInstanceCount": 1,
        "InstanceType": "ml.m5.large",
        **overrides,
    }


def _error(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


def test_models_and_endpoint_configs_are_created_described_tagged_listed_and_deleted(sagemaker, bucket):
    model = unique("Model")
    container = {"Image": IMAGE, "ModelDataUrl": f"s3://{bucket}/model.tar.gz", "Environment": {"A": "1"}}
    model_arn = sagemaker.create_model(
        ModelName=model, PrimaryContainer=container, Tags=[{"Key": "team", "Value": "ml"}]
    )["ModelArn"]
    assert model_arn == f"{ACCOUNT_ARN}:model/{model.lower()}"
    described = sagemaker.describe_model(ModelName=model)
    assert described["ModelName"] == model and described["ModelArn"] == model_arn
    assert described["PrimaryContainer"] == {"Mode": "SingleModel", **container}  # SageMaker's default
    assert described["EnableNetworkIsolation"] is False
    assert "CreationTime" in described
    assert sagemaker.list_tags(ResourceArn=model_arn)["Tags"] == [{"Key": "team", "Value": "ml"}]

    config = unique("Config")
    config_arn = sagemaker.create_endpoint_config(
        EndpointConfigName=config, ProductionVariants=[_variant(model)]
    )["EndpointConfigArn"]
    assert config_arn == f"{ACCOUNT_ARN}:endpoint-config/{config.lower()}"
    [variant] = sagemaker.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"]
    assert variant["InitialVariantWeight"] == 1.0  # SageMaker's default, filled in
    sagemaker.add_tags(ResourceArn=config_arn, Tags=[{"Key": "stage", "Value": "test"}])
    # The name keeps its case in a hand-written ARN: ARNs match case-insensitively.
    tags = sagemaker.list_tags(ResourceArn=f"{ACCOUNT_ARN}:endpoint-config/{config}")["Tags"]
    assert tags == [{"Key": "stage", "Value": "test"}]

    names = [m["ModelName"] for m in sagemaker.list_models(NameContains=model[:11])["Models"]]
    assert names == [model]
    configs = sagemaker.list_endpoint_configs(NameContains=config.lower())["EndpointConfigs"]
    assert [c["EndpointConfigArn"] for c in configs] == [config_arn]

    sagemaker.delete_endpoint_config(EndpointConfigName=config)
    sagemaker.delete_model(ModelName=model)
    assert _error(lambda: sagemaker.describe_model(ModelName=model)) == (
        "ValidationException",
        f'Could not find model "{model_arn}".',
    )
    # SageMaker names the ARN: `Could not find endpoint configuration "arn:aws:sagemaker:…".`
    # (DescribeEndpointConfig, as seen by users of amazon-sagemaker-examples).
    assert _error(lambda: sagemaker.describe_endpoint_config(EndpointConfigName=config)) == (
        "ValidationException",
        f'Could not find endpoint configuration "{config_arn}".',
    )


def test_duplicates_and_missing_resources_answer_validation_exceptions(sagemaker):
    model = unique("model")
    sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": IMAGE})
    assert _error(
        lambda: sagemaker.create_model(ModelName=model.upper(), PrimaryContainer={"Image": IMAGE})
    ) == (
        "ValidationException",
        f'Cannot create already existing model "{ACCOUNT_ARN}:model/{model}".',
    )
    missing_model = _error(
        lambda: sagemaker.create_endpoint_config(
            EndpointConfigName=unique("config"), ProductionVariants=[_variant("no-such-model")]
        )
    )
    assert missing_model == (
        "ValidationException",
        f'Could not find model "{ACCOUNT_ARN}:model/no-such-model".',
    )
    assert _error(lambda: sagemaker.create_endpoint(EndpointName=unique("e"), EndpointConfigName="nope")) == (
        "ValidationException",
        f'Could not find endpoint configuration "{ACCOUNT_ARN}:endpoint-config/nope".',
    )
    # SageMaker names the endpoint's ARN (amazon-sagemaker-examples issue 2402, DeleteEndpoint:
    # `Could not find endpoint "arn:aws:sagemaker:us-west-2:…:endpoint/ipinsights-…".`).
    config = unique("config")
    sagemaker.create_endpoint_config(EndpointConfigName=config, ProductionVariants=[_variant(model)])
    for call in (
        lambda: sagemaker.describe_endpoint(EndpointName="Nope"),
        lambda: sagemaker.delete_endpoint(EndpointName="Nope"),
        lambda: sagemaker.update_endpoint(EndpointName="Nope", EndpointConfigName=config),
        lambda: sagemaker.update_endpoint_weights_and_capacities(
            EndpointName="Nope", DesiredWeightsAndCapacities=[{"VariantName": "v", "DesiredWeight": 1.0}]
        ),
    ):
        missing = f'Could not find endpoint "{ACCOUNT_ARN}:endpoint/nope".'
        assert _error(call) == ("ValidationException", missing)
    assert sagemaker.list_endpoints(NameContains="nope")["Endpoints"] == []


@pytest.mark.parametrize(
    ("operation", "params", "complaint"),
    [
        (
            "create_model",
            {"PrimaryContainer": {"Image": IMAGE, "ModelDataUrl": "s3://b/model.zip"}},
            ".tar.gz",
        ),
        ("create_model", {}, "PrimaryContainer is required"),
        ("create_model", {"PrimaryContainer": {"Image": IMAGE, "Mode": "MultiModel"}}, "MultiModel"),
        (
            "create_model",
            {"PrimaryContainer": {"Image": IMAGE}, "Containers": [{"Image": IMAGE}]},
            "not both",
        ),
        (
            "create_model",
            {"PrimaryContainer": {"Image": IMAGE, "Environment": {"1BAD": "x"}}},
            "regular expression pattern",
        ),
        (
            "create_model",
            {
                "PrimaryContainer": {
                    "Image": IMAGE,
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri": "s3://b/p/",
                            "S3DataType": "S3Prefix",
                            "CompressionType": "Gzip",
                        }
                    },
                }
            },
            "CompressionType None",
        ),
    ],
)
def test_bad_create_model_requests_are_refused_and_create_nothing(
    sagemaker, bucket, operation, params, complaint
):
    name = unique("bad")
    # The model data is in the caller's own bucket, so the complaint is the request's, not its access.
    params = json.loads(json.dumps(params).replace("s3://b/", f"s3://{bucket}/"))
    code, message = _error(lambda: getattr(sagemaker, operation)(ModelName=name, **params))
    assert code == "ValidationException"
    assert complaint in message
    assert sagemaker.list_models(NameContains=name)["Models"] == []


def test_bad_endpoint_config_and_deployment_config_requests_are_refused(sagemaker):
    model = unique("model")
    sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": IMAGE})
    config = unique("config")
    for variants, complaint in (
        ([_variant(model, InstanceType="ml.m5.large"), _variant(model)], "Variant names must be unique"),
        ([{"VariantName": "v", "ModelName": model, "InitialInstanceCount": 1}], "InstanceType is required"),
        (
            [_variant(model, ServerlessConfig={"MemorySizeInMB": 1024, "MaxConcurrency": 1})],
            "InstanceType cannot be given with ServerlessConfig",
        ),
        ([_variant(model, InstanceType="ml.nope.large")], "ml.nope.large"),
    ):
        code, message = _error(
            lambda variants=variants: sagemaker.create_endpoint_config(
                EndpointConfigName=config, ProductionVariants=variants
            )
        )
        assert code == "ValidationException" and complaint in message, message
    assert sagemaker.list_endpoint_configs(NameContains=config)["EndpointConfigs"] == []

    sagemaker.create_endpoint_config(EndpointConfigName=config, ProductionVariants=[_variant(model)])
    for deployment_config, complaint in (
        (
            {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {"Type": "CANARY", "WaitIntervalInSeconds": 1}
                }
            },
            "requires CanarySize",
        ),
        (
            {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1},
                    "WaitIntervalInSeconds": 1,
                }
            },
            "RollingUpdatePolicy is not supported",
        ),
    ):
        name = unique("endpoint")
        code, message = _error(
            lambda name=name, deployment_config=deployment_config: sagemaker.create_endpoint(
                EndpointName=name, EndpointConfigName=config, DeploymentConfig=deployment_config
            )
        )
        assert code == "ValidationException" and complaint in message, message
        assert sagemaker.list_endpoints(NameContains=name)["Endpoints"] == []


def test_list_models_pages_with_the_boto3_paginator(sagemaker):
    prefix = unique("page")
    for index in range(5):
        sagemaker.create_model(ModelName=f"{prefix}-{index}", PrimaryContainer={"Image": IMAGE})
    pages = sagemaker.get_paginator("list_models").paginate(
        NameContains=prefix, SortBy="Name", SortOrder="Ascending", PaginationConfig={"PageSize": 2}
    )
    names = [model["ModelName"] for page in pages for model in page["Models"]]
    assert names == [f"{prefix}-{index}" for index in range(5)]
