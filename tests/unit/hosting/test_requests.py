"""Cross-field checks on hosting requests, beyond what the botocore shapes say."""

import pytest

from hosting.requests import check_create_model, check_deployment_config, check_weights_and_capacities
from protocol.errors import ValidationException


def test_a_model_needs_one_container_with_an_image_and_a_tar_gz_model():
    check_create_model(
        {"ModelName": "m", "PrimaryContainer": {"Image": "i", "ModelDataUrl": "s3://b/k.tar.gz"}}
    )
    check_create_model({"ModelName": "m", "Containers": [{"Image": "i"}]})
    for params, complaint in [
        ({"ModelName": "m"}, "PrimaryContainer is required"),
        ({"ModelName": "m", "Containers": [{"Image": "i"}, {"Image": "j"}]}, "inference pipelines"),
        ({"ModelName": "m", "PrimaryContainer": {"Environment": {}}}, "Image is required"),
        (
            {"ModelName": "m", "PrimaryContainer": {"ModelPackageName": "p", "Image": "i"}},
            "Image cannot be given with ModelPackageName",
        ),
        ({"ModelName": "m", "PrimaryContainer": {"Image": "i", "ModelDataUrl": "s3://b/k.tar"}}, ".tar.gz"),
        ({"ModelName": "m", "PrimaryContainer": {"Image": "i"}, "EnableNetworkIsolation": True}, "network"),
    ]:
        with pytest.raises(ValidationException, match=complaint):
            check_create_model(params)


def test_an_uncompressed_model_prefix_must_be_a_directory():
    source = {"S3Uri": "s3://b/model", "S3DataType": "S3Prefix", "CompressionType": "None"}
    with pytest.raises(ValidationException, match="must end with '/'"):
        check_create_model(
            {
                "ModelName": "m",
                "PrimaryContainer": {"Image": "i", "ModelDataSource": {"S3DataSource": source}},
            }
        )


def test_deployment_configs_need_the_size_their_type_uses_and_nothing_else():
    check_deployment_config(None)
    check_deployment_config(
        {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
            }
        }
    )
    size = {"Type": "INSTANCE_COUNT", "Value": 1}
    for routing, complaint in [
        ({"Type": "LINEAR", "WaitIntervalInSeconds": 1}, "requires LinearStepSize"),
        (
            {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 1, "CanarySize": size},
            "applies only to Type CANARY",
        ),
        (
            {
                "Type": "CANARY",
                "WaitIntervalInSeconds": 1,
                "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 150},
            },
            "at most 100",
        ),
    ]:
        with pytest.raises(ValidationException, match=complaint):
            check_deployment_config({"BlueGreenUpdatePolicy": {"TrafficRoutingConfiguration": routing}})
    with pytest.raises(ValidationException, match="AutoRollbackConfiguration is not supported"):
        check_deployment_config({"AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "a"}]}})


def test_weight_and_capacity_changes_name_existing_variants_once_each():
    desired = {name: {"DesiredWeight": 1.0, "DesiredInstanceCount": 1} for name in ("a", "b")}
    check_weights_and_capacities([{"VariantName": "a", "DesiredWeight": 0.0}], desired, "e")
    for changes, complaint in [
        ([{"VariantName": "c", "DesiredWeight": 1.0}], "does not exist"),
        ([{"VariantName": "a"}], "give DesiredWeight"),
        (
            [{"VariantName": "a", "DesiredWeight": 1.0}, {"VariantName": "a", "DesiredWeight": 2.0}],
            "more than once",
        ),
        ([{"VariantName": "a", "DesiredInstanceCount": 0}], "at least 1"),
    ]:
        with pytest.raises(ValidationException, match=complaint):
            check_weights_and_capacities(changes, desired, "e")


def test_a_multi_model_container_takes_an_s3_prefix_of_models():
    cached = {"ModelCacheSetting": "Enabled"}
    for extra in ({}, {"MultiModelConfig": cached}):
        container = {"Image": "i", "Mode": "MultiModel", "ModelDataUrl": "s3://b/p/", **extra}
        check_create_model({"ModelName": "m", "PrimaryContainer": container})
    for container, complaint in [
        ({"Image": "i", "Mode": "MultiModel"}, "needs ModelDataUrl"),
        ({"Image": "i", "Mode": "MultiModel", "ModelDataUrl": "s3://b/p/m.tar.gz"}, "prefix ending with '/'"),
        ({"Mode": "MultiModel", "ModelDataUrl": "s3://b/p/"}, "Image is required"),
        (
            {"Image": "i", "Mode": "MultiModel", "ModelDataUrl": "s3://b/p/",
             "MultiModelConfig": {"ModelCacheSetting": "Disabled"}},
            "ModelCacheSetting Disabled",
        ),
        ({"Image": "i", "MultiModelConfig": {"ModelCacheSetting": "Enabled"}}, "Mode MultiModel only"),
    ]:
        with pytest.raises(ValidationException, match=complaint):
            check_create_model({"ModelName": "m", "PrimaryContainer": container})
