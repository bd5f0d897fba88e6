import pytest

from protocol.arns import Arn, log_group_arn, make_arn, parse_arn, role_name, role_path
from protocol.errors import ValidationException


def test_arn_lower_cases_the_name():
    assert make_arn("us-east-1", "123456789012", "endpoint", "MyEndpoint") == (
        "arn:aws:sagemaker:us-east-1:123456789012:endpoint/myendpoint"
    )


@pytest.mark.parametrize(
    ("region", "partition"), [("eu-west-1", "aws"), ("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")]
)
def test_partition_follows_the_region(region, partition):
    assert make_arn(region, "123456789012", "model", "m").startswith(f"arn:{partition}:sagemaker:{region}:")


def test_parse_arn_splits_resource_type_and_name():
    assert parse_arn("arn:aws:sagemaker:us-east-1:123456789012:training-job/job-1") == Arn(
        "aws", "sagemaker", "us-east-1", "123456789012", "training-job", "job-1"
    )


def test_log_group_arn_keeps_case_and_parses_back():
    arn = log_group_arn("us-east-1", "123456789012", "/aws/sagemaker/Endpoints/MyEp")
    assert arn == "arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/Endpoints/MyEp"
    assert parse_arn(arn).resource_name == "/aws/sagemaker/Endpoints/MyEp"


@pytest.mark.parametrize("text", ["", "not-an-arn", "arn:aws:sagemaker:us-east-1:12345:model/m"])
def test_malformed_arn_is_a_validation_exception(text):
    with pytest.raises(ValidationException):
        parse_arn(text)


@pytest.mark.parametrize(
    ("arn", "name", "path"),
    [
        ("arn:aws:iam::123456789012:role/SageMakerRole", "SageMakerRole", "/"),
        (
            "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole",
            "AmazonSageMaker-ExecutionRole",
            "/service-role/",
        ),
        ("arn:aws-cn:iam::123456789012:role/a/b/Deep", "Deep", "/a/b/"),
    ],
)
def test_a_role_arn_names_its_role_and_path_as_iam_splits_them(arn, name, path):
    """IAM's ARN of a role is `role/<path without its leading slash><name>` (IAM identifiers,
    "IAM ARNs"); STS names a session's role by its name alone."""
    assert (role_name(arn), role_path(arn)) == (name, path)
