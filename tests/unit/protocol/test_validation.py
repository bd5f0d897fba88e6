"""Input validation against botocore shapes, in AWS's ValidationException wording."""

import copy
from datetime import UTC, datetime

import botocore.session
import pytest

from protocol.errors import ValidationException
from protocol.patterns import compile_pattern
from protocol.validation import validate_input

NAME_PATTERN = "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"

TRAINING_JOB = {
    "TrainingJobName": "job-1",
    "AlgorithmSpecification": {"TrainingImage": "algo:latest", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
    "InputDataConfig": [
        {
            "ChannelName": "train",
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/train"}},
        }
    ],
    "OutputDataConfig": {"S3OutputPath": "s3://b/output"},
    "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "HyperParameters": {"epochs": "3"},
}


def validation_message(service: str, operation: str, params: dict) -> str:
    with pytest.raises(ValidationException) as raised:
        validate_input(service, operation, params)
    return raised.value.message


def training_job(**changes) -> dict:
    params = copy.deepcopy(TRAINING_JOB)
    params.update(changes)
    return params


def test_valid_input_is_returned_unchanged():
    assert validate_input("sagemaker", "CreateTrainingJob", training_job()) == TRAINING_JOB


def test_pattern_violation_quotes_value_path_and_anchored_pattern():
    assert validation_message("sagemaker", "DescribeTrainingJob", {"TrainingJobName": "a_b"}) == (
        "1 validation error detected: Value 'a_b' at 'trainingJobName' failed to satisfy constraint: "
        f"Member must satisfy regular expression pattern: {NAME_PATTERN}"
    )


def test_patterns_must_match_the_whole_value():
    message = validation_message("sagemaker", "DescribeTrainingJob", {"TrainingJobName": "ok-name!"})
    assert "Value 'ok-name!' at 'trainingJobName'" in message


def test_every_violation_is_counted_and_joined_with_semicolons():
    name = "a" * 64
    assert validation_message("sagemaker", "DescribeTrainingJob", {"TrainingJobName": name}) == (
        f"2 validation errors detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
        "Member must have length less than or equal to 63; "
        f"Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
        f"Member must satisfy regular expression pattern: {NAME_PATTERN}"
    )


def test_missing_required_member_must_not_be_null():
    assert validation_message("sagemaker", "DescribeTrainingJob", {}) == (
        "1 validation error detected: Value null at 'trainingJobName' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_enum_violation_lists_the_allowed_values():
    message = validation_message("sagemaker", "ListTrainingJobs", {"SortOrder": "Sideways"})
    assert message == (
        "1 validation error detected: Value 'Sideways' at 'sortOrder' failed to satisfy constraint: "
        "Member must satisfy enum value set: [Ascending, Descending]"
    )


def test_numeric_range_violation_names_nested_member_path():
    params = training_job()
    params["ResourceConfig"]["InstanceCount"] = -1
    assert validation_message("sagemaker", "CreateTrainingJob", params) == (
        "1 validation error detected: Value '-1' at 'resourceConfig.instanceCount' failed to satisfy "
        "constraint: Member must have value greater than or equal to 0"
    )


def test_list_items_are_addressed_as_one_based_members():
    params = training_job()
    params["InputDataConfig"][0]["ChannelName"] = "bad name"
    message = validation_message("sagemaker", "CreateTrainingJob", params)
    assert message.startswith(
        "1 validation error detected: Value 'bad name' at 'inputDataConfig.1.member.channelName' "
        "failed to satisfy constraint: Member must satisfy regular expression pattern: ^[A-Za-z0-9\\.\\-_]+"
    )


def test_map_value_violations_are_reported_on_the_map():
    message = validation_message(
        "sagemaker", "CreateTrainingJob", training_job(HyperParameters={"lr": "x" * 2501})
    )
    assert message.endswith(
        "at 'hyperParameters' failed to satisfy constraint: "
        "Map value must satisfy constraint: [Member must have length less than or equal to 2500]"
    )


def test_wrong_json_types_are_reported_per_member():
    message = validation_message("sagemaker", "ListTrainingJobs", {"MaxResults": "10", "NameContains": 5})
    assert message == (
        "2 validation errors detected: "
        "Value '10' at 'maxResults' failed to satisfy constraint: Member must be of type integer; "
        "Value '5' at 'nameContains' failed to satisfy constraint: Member must be of type string"
    )


def test_booleans_are_not_integers():
    message = validation_message("sagemaker", "ListTrainingJobs", {"MaxResults": True})
    assert (
        "Value 'true' at 'maxResults' failed to satisfy constraint: Member must be of type integer" in message
    )


def test_unknown_members_are_rejected():
    assert validation_message("sagemaker", "ListModels", {"Bogus": 1}) == (
        "1 validation error detected: Value '1' at 'bogus' failed to satisfy constraint: "
        "Member is not defined in shape ListModelsInput"
    )


def test_timestamps_arrive_as_epoch_seconds_and_leave_as_aware_utc_datetimes():
    params = validate_input("sagemaker", "ListTrainingJobs", {"CreationTimeAfter": 1705320000.5})
    assert params == {"CreationTimeAfter": datetime(2024, 1, 15, 12, 0, 0, 500000, tzinfo=UTC)}


def test_timestamp_that_is_not_a_number_is_a_type_violation():
    message = validation_message("sagemaker", "ListTrainingJobs", {"CreationTimeAfter": "yesterday"})
    assert "Member must be of type timestamp" in message


@pytest.mark.parametrize("service", ["sagemaker", "sagemaker-runtime", "logs"])
def test_every_model_pattern_compiles(service):
    model = botocore.session.get_session().get_service_model(service)
    patterns = {model.shape_for(name).metadata.get("pattern") for name in model.shape_names} - {None}
    for pattern in patterns:
        compile_pattern(pattern)


@pytest.mark.parametrize(
    ("java_pattern", "accepted", "rejected"),
    [
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "Étiquette 12 :=", "tab\there"),
        (r"\A\S[\p{Print}]*\z", "a b~", "a\n"),
        (r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\t]*", "ok \U0001f600", "\x01"),
        (r"[\w-_]*", "a-b_c", "a b"),
        (r"([\p{L}\p{Z}\p{N}_.:\/=+\-@]*)${1,128}", "key", "key!"),
    ],
)
def test_java_pattern_constructs_keep_their_meaning(java_pattern, accepted, rejected):
    pattern = compile_pattern(java_pattern)
    assert pattern.fullmatch(accepted)
    assert not pattern.fullmatch(rejected)


def test_scalar_list_item_violations_are_reported_once_on_the_list():
    vpc = {"SecurityGroupIds": ["sg-1", "sg_2"], "Subnets": ["subnet-1"]}
    assert validation_message("sagemaker", "CreateTrainingJob", training_job(VpcConfig=vpc)) == (
        "1 validation error detected: Value '[sg-1, sg_2]' at 'vpcConfig.securityGroupIds' failed to satisfy "
        "constraint: Member must satisfy constraint: "
        "[Member must satisfy regular expression pattern: ^[-0-9a-zA-Z]+]"
    )


@pytest.mark.parametrize("weight", ["NaN", "Infinity"])
def test_a_non_finite_number_is_outside_any_declared_range(weight):
    # botocore sends float("nan") and float("inf") as these strings; a weight of either would
    # leave the endpoint's traffic split without meaning.
    variant = {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1}
    variant["InitialVariantWeight"] = weight
    params = {"EndpointConfigName": "c", "ProductionVariants": [variant]}
    assert validation_message("sagemaker", "CreateEndpointConfig", params).endswith(
        "at 'productionVariants.1.member.initialVariantWeight' failed to satisfy constraint: "
        "Member must be a finite number"
    )

