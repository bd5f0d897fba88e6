"""Serverless variants: SageMaker's rules for ServerlessConfig and ServerlessUpdateConfig, what a
deployment and DescribeEndpoint make of one, and the scaling decisions (raised by requests up to
MaxConcurrency, lowered when idle down to ProvisionedConcurrency)."""

import pytest

from hosting import serverless
from hosting.requests import check_create_endpoint_config, check_weights_and_capacities
from hosting.serverless_scaling import lowered_count, raised_count
from hosting.serverless_slots import Usage
from protocol.errors import ValidationException


def _variant(**serverless_config) -> dict:
    config = {"MemorySizeInMB": 2048, "MaxConcurrency": 3, **serverless_config}
    return {"VariantName": "AllTraffic", "ModelName": "m", "ServerlessConfig": config}


def _config(*variants, **extra) -> dict:
    return {"EndpointConfigName": "c", "ProductionVariants": list(variants), **extra}


def test_a_serverless_variant_needs_no_instance_type_or_count():
    check_create_endpoint_config(_config(_variant()))
    check_create_endpoint_config(_config(_variant(ProvisionedConcurrency=3)))


@pytest.mark.parametrize(
    "params, complaint",
    [
        (_config(_variant(MemorySizeInMB=1500)), "MemorySizeInMB must be one of 1024, 2048"),
        (
            _config(_variant(ProvisionedConcurrency=4)),
            "ProvisionedConcurrency (4) must be less than or equal",
        ),
        (
            _config({**_variant(), "InstanceType": "ml.m5.large"}),
            "InstanceType cannot be given with ServerlessConfig",
        ),
        (_config({**_variant(), "InitialInstanceCount": 1}), "InitialInstanceCount cannot be given"),
        (
            _config(_variant(), {**_variant(), "VariantName": "b"}),
            "supports only one production variant",
        ),
        (
            _config(
                _variant(),
                {
                    "VariantName": "b",
                    "ModelName": "m",
                    "InstanceType": "ml.m5.large",
                    "InitialInstanceCount": 1,
                },
            ),
            "needs ServerlessConfig",
        ),
        (
            _config(_variant(), AsyncInferenceConfig={"OutputConfig": {"S3OutputPath": "s3://b/o/"}}),
            "AsyncInferenceConfig is not supported for serverless endpoints",
        ),
    ],
)
def test_bad_serverless_configs_are_refused_with_what_to_change(params, complaint):
    with pytest.raises(ValidationException) as refused:
        check_create_endpoint_config(params)
    assert complaint in str(refused.value)


def test_a_serverless_variant_cannot_serve_a_multi_model_model():
    model = {"PrimaryContainer": {"Image": "i", "Mode": "MultiModel", "ModelDataUrl": "s3://b/p/"}}
    assert "multi-model" in serverless.model_problems(_variant(), model)[0]
    assert serverless.model_problems(_variant(), {"PrimaryContainer": {"Image": "i"}}) == []


def test_an_endpoint_is_never_converted_between_serverless_and_instances():
    instances = _config({"VariantName": "v", "ModelName": "m", "InstanceType": "ml.m5.large"})
    serverless.check_conversion(_config(_variant()), _config(_variant(MaxConcurrency=5)))
    for running, new in ((instances, _config(_variant())), (_config(_variant()), instances)):
        with pytest.raises(ValidationException, match="create a new endpoint instead"):
            serverless.check_conversion(running, new)


def test_a_deployment_starts_with_the_provisioned_containers_only():
    variant = {**_variant(), "InitialVariantWeight": 1.0}
    assert serverless.initial_desired(variant)["DesiredInstanceCount"] == 0
    provisioned = {**_variant(ProvisionedConcurrency=2), "InitialVariantWeight": 1.0}
    assert serverless.initial_desired(provisioned) == {
        "DesiredWeight": 1.0,
        "DesiredInstanceCount": 2,
        "ServerlessConfig": {"MemorySizeInMB": 2048, "MaxConcurrency": 3, "ProvisionedConcurrency": 2},
    }


def test_describe_shows_serverless_configs_instead_of_instance_counts():
    values = serverless.initial_desired({**_variant(), "InitialVariantWeight": 1.0})
    summary = serverless.summarized(
        values, {"VariantName": "v", "CurrentInstanceCount": 1, "DesiredInstanceCount": 1}
    )
    assert summary == {
        "VariantName": "v",
        "CurrentServerlessConfig": {"MemorySizeInMB": 2048, "MaxConcurrency": 3},
        "DesiredServerlessConfig": {"MemorySizeInMB": 2048, "MaxConcurrency": 3},
    }
    instance_based = {"DesiredWeight": 1.0, "DesiredInstanceCount": 1}
    assert serverless.summarized(instance_based, {"CurrentInstanceCount": 1}) == {"CurrentInstanceCount": 1}


def test_serverless_update_config_changes_the_limits_and_keeps_the_count_within_them():
    values = {
        "DesiredWeight": 1.0,
        "DesiredInstanceCount": 3,
        "ServerlessConfig": _variant(MaxConcurrency=5)["ServerlessConfig"],
    }
    changes = {"v": values}
    check_weights_and_capacities(
        [{"VariantName": "v", "ServerlessUpdateConfig": {"MaxConcurrency": 2}}], changes, "e"
    )
    lowered = serverless.apply_update(values, {"MaxConcurrency": 2})
    assert lowered["DesiredInstanceCount"] == 2 and lowered["ServerlessConfig"]["MaxConcurrency"] == 2
    raised = serverless.apply_update(values, {"ProvisionedConcurrency": 4})
    assert raised["DesiredInstanceCount"] == 4
    for change, complaint in (
        (
            {"VariantName": "v", "DesiredInstanceCount": 2},
            "DesiredInstanceCount cannot be given for a serverless",
        ),
        (
            {"VariantName": "v", "ServerlessUpdateConfig": {"ProvisionedConcurrency": 6}},
            "must be less than or equal",
        ),
    ):
        with pytest.raises(ValidationException, match=complaint):
            check_weights_and_capacities([change], changes, "e")
    instance_based = {"v": {"DesiredWeight": 1.0, "DesiredInstanceCount": 1}}
    with pytest.raises(ValidationException, match="applies to a serverless variant only"):
        check_weights_and_capacities(
            [{"VariantName": "v", "ServerlessUpdateConfig": {"MaxConcurrency": 2}}], instance_based, "e"
        )


def test_requests_raise_the_count_to_those_in_flight_never_past_max_concurrency():
    config = {"MemorySizeInMB": 1024, "MaxConcurrency": 3}
    assert raised_count(0, 1, config) == 1  # the cold start
    assert raised_count(1, 1, config) == 1  # a warm container serves it
    assert raised_count(1, 2, config) == 2
    assert raised_count(3, 7, config) == 3
    assert raised_count(2, 1, config) == 2  # requests never lower it


def test_idle_lowers_the_count_to_what_the_window_needs_never_below_provisioned():
    config = {"MemorySizeInMB": 1024, "MaxConcurrency": 5, "ProvisionedConcurrency": 1}
    assert lowered_count(3, Usage(in_flight=0, recent_peak=0), config) == 1
    assert lowered_count(3, Usage(in_flight=0, recent_peak=2), config) == 2  # used within the window
    assert lowered_count(3, Usage(in_flight=3, recent_peak=0), config) == 3  # long requests still running
    assert (
        lowered_count(0, Usage(in_flight=2, recent_peak=2), {"MaxConcurrency": 5}) == 0
    )  # never raised here
    assert lowered_count(2, Usage(0, 0), {"MaxConcurrency": 5}) == 0  # scale to zero
