"""The tenancy rule on S3 locations (accounts/s3_tenancy.py): every S3 URI of every served
operation's request is checked against the caller's account before anything is created, and
again where the worker turns it into reads or writes."""
import ast
from pathlib import Path

import pytest
from botocore.model import Shape

from accounts import buckets, s3_tenancy
from protocol import registry
from protocol.context import RequestContext
from protocol.errors import AccessDenied, ValidationException
from protocol.shapes import operation_model

MINE, THEIRS = "123456789012", "210987654321"
CTX = RequestContext(account_id=MINE, region="us-east-1", access_key_id="AKIDMINE")
ROLE = f"arn:aws:iam::{MINE}:role/SageMakerRole"
PROJECT = Path(__file__).resolve().parents[3]


@pytest.fixture
def owned(db):
    buckets.claim("mine", MINE)
    buckets.claim("theirs", THEIRS)


def served_operations() -> list[tuple[str, str]]:
    return sorted(
        (registry.SERVICES[prefix].botocore_name, name) for prefix, name in registry._handlers
    )


def s3_string_leaves(shape: Shape, path: tuple = (), seen: frozenset = frozenset()):
    """Every string member reachable in `shape` whose pattern mentions s3 (a textual criterion,
    independent of the module's own test of a pattern), as a path of member names, [] and {}."""
    if shape.type_name == "structure" and shape.name not in seen:
        for name, member in shape.members.items():
            yield from s3_string_leaves(member, (*path, name), seen | {shape.name})
    elif shape.type_name == "list":
        yield from s3_string_leaves(shape.member, (*path, []), seen)
    elif shape.type_name == "map":
        yield from s3_string_leaves(shape.value, (*path, {}), seen)
    elif shape.type_name == "string" and "s3" in shape.metadata.get("pattern", "").lower():
        yield path


def request_with(path: tuple, value: str):
    """The smallest request holding `value` at `path`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if head == []:
        return [request_with(rest, value)]
    if head == {}:
        return {"key": request_with(rest, value)}
    return {head: request_with(rest, value)}


def every_s3_member() -> list[tuple[str, str, tuple]]:
    return [
        (service, operation, path)
        for service, operation in served_operations()
        for path in s3_string_leaves(operation_model(service, operation).input_shape)
    ]


def test_the_walk_covers_the_s3_members_of_training_models_clusters_and_endpoint_configs():
    operations = {operation for _, operation, _ in every_s3_member()}
    assert {"CreateTrainingJob", "CreateModel", "CreateCluster", "CreateEndpointConfig"} <= operations
    assert len(every_s3_member()) >= 20  # the test would pass vacuously on an empty walk


@pytest.mark.parametrize("service, operation, path", every_s3_member(), ids=lambda value: str(value))
def test_every_s3_member_of_every_served_operation_is_refused_on_another_accounts_bucket(
    owned, service, operation, path
):
    request = request_with(path, "s3://theirs/data/x")
    with pytest.raises(ValidationException, match="theirs"):
        s3_tenancy.refuse_foreign_locations(CTX, service, operation, request)
    s3_tenancy.refuse_foreign_locations(CTX, service, operation, request_with(path, "s3://mine/data/x"))


@pytest.mark.parametrize("uri", ["s3://theirs/x", "https://s3.example.com/theirs/x"])
def test_a_bucket_of_another_account_is_refused_at_create(owned, uri):
    request = {"ModelName": "m", "ExecutionRoleArn": ROLE, "PrimaryContainer": {"ModelDataUrl": uri}}
    with pytest.raises(ValidationException) as raised:
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateModel", request)
    # CreateModel's words for model data its role cannot read.
    assert raised.value.message.startswith(f"Could not access model data at {uri}. Please ensure that")
    assert f'"{ROLE}"' in raised.value.message and "us-east-1" in raised.value.message


def test_a_bucket_of_nobody_is_the_platforms_and_refused_but_a_missing_one_may_be_named(owned, bucket):
    """`bucket` exists in the store and no account owns it (made with the platform's key). A bucket
    that does not exist holds nothing to read: its job fails on NoSuchBucket, as on SageMaker."""
    request = {"RoleArn": ROLE, "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/out"}}
    with pytest.raises(ValidationException, match="OutputDataConfig.S3OutputPath"):
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateTrainingJob", request)
    with pytest.raises(s3_tenancy.ForeignLocation, match="AccessDenied"):
        s3_tenancy.location(MINE, f"s3://{bucket}/out", "write")
    missing = {"RoleArn": ROLE, "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}-missing/out"}}
    s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateTrainingJob", missing)
    assert s3_tenancy.location(MINE, f"s3://{bucket}-missing/out").bucket == f"{bucket}-missing"


def test_a_channel_in_another_accounts_bucket_gets_create_training_jobs_words(owned):
    request = {
        "RoleArn": ROLE,
        "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": "s3://theirs/train/"}}}],
        "OutputDataConfig": {"S3OutputPath": "s3://mine/out"},
    }
    with pytest.raises(ValidationException) as raised:
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateTrainingJob", request)
    # aws/amazon-sagemaker-examples#2489: SageMaker's answer when the role cannot list the prefix.
    assert raised.value.message == (
        'No S3 objects found under S3 URL "s3://theirs/train/" given in input data source. Please ensure '
        "that the bucket exists in the selected region (us-east-1), that objects exist under that S3 "
        f'prefix, and that the role "{ROLE}" has "s3:ListBucket" permissions on bucket "theirs".'
    )


@pytest.mark.parametrize("member, key, value", [
    ("HyperParameters", "sagemaker_submit_directory", '"s3://theirs/code/sourcedir.tar.gz"'),
    ("HyperParameters", "sagemaker_submit_directory", "s3://theirs/code/sourcedir.tar.gz"),
])
def test_script_modes_code_location_is_checked_too(owned, member, key, value):
    request = {"RoleArn": ROLE, "OutputDataConfig": {"S3OutputPath": "s3://mine/out"}, member: {key: value}}
    with pytest.raises(ValidationException, match=f"{member}.{key}"):
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateTrainingJob", request)


def test_a_serving_containers_code_location_is_checked_too(owned):
    container = {"Image": "x", "Environment": {"SAGEMAKER_SUBMIT_DIRECTORY": "s3://theirs/code.tar.gz"}}
    request = {"ModelName": "m", "ExecutionRoleArn": ROLE, "PrimaryContainer": container}
    with pytest.raises(ValidationException, match="PrimaryContainer.Environment.SAGEMAKER_SUBMIT_DIRECTORY"):
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateModel", request)
    container["Environment"]["SAGEMAKER_SUBMIT_DIRECTORY"] = "/opt/ml/model/code"  # a path, not a location
    s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateModel", request)


def test_a_role_of_another_account_is_refused_as_aws_refuses_passing_it(owned):
    request = {"ModelName": "m", "ExecutionRoleArn": f"arn:aws:iam::{THEIRS}:role/R", "PrimaryContainer": {}}
    with pytest.raises(AccessDenied, match=r"^Cross-account pass role is not allowed\.$"):
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateModel", request)


@pytest.mark.parametrize(
    "role",
    ["R" * 65, f"{'p' * 520}/R", ""],  # a name too long, a path too long, no name
)
def test_a_role_no_iam_role_can_be_is_refused_as_sagemaker_refuses_a_role_it_cannot_assume(owned, role):
    """IAM role names are at most 64 word characters or +=,.@- and paths at most 512 characters
    (IAM API reference, Role), where SageMaker's RoleArn allows 2048; SageMaker refuses a role it
    cannot assume with this ValidationException (quoted for CreateTransformJob in
    awslabs/predictive-maintenance-using-machine-learning#3)."""
    role_arn = f"arn:aws:iam::{MINE}:role/{role}"
    request = {"ModelName": "m", "ExecutionRoleArn": role_arn, "PrimaryContainer": {}}
    message = (
        f"Could not assume role {role_arn}. Please ensure that the role exists and allows principal "
        "'sagemaker.amazonaws.com' to assume the role."
    )
    with pytest.raises(ValidationException) as raised:
        s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateModel", request)
    assert raised.value.message == message


def test_requests_naming_only_the_callers_buckets_and_roles_pass(owned):
    request = {
        "RoleArn": ROLE,
        "OutputDataConfig": {"S3OutputPath": "s3://mine/out"},
        "CheckpointConfig": {"S3Uri": "s3://mine/ckpt"},
        "HyperParameters": {"sagemaker_submit_directory": '"s3://mine/code.tar.gz"'},
    }
    s3_tenancy.refuse_foreign_locations(CTX, "sagemaker", "CreateTrainingJob", request)


def test_operations_without_locations_skip_the_walk():
    assert s3_tenancy.request_locations("sagemaker", "DescribeTrainingJob", {"TrainingJobName": "j"}) == []


def test_at_use_time_only_the_owners_locations_open(owned):
    assert s3_tenancy.location(MINE, "s3://mine/a/b") == ("mine", "a/b")
    with pytest.raises(s3_tenancy.ForeignLocation, match=r"^Could not write s3://theirs/a: AccessDenied$"):
        s3_tenancy.location(MINE, "s3://theirs/a", "write")
    buckets.release("theirs")  # a bucket that changed hands after the request was accepted
    buckets.claim("theirs", MINE)
    assert s3_tenancy.location(MINE, "s3://theirs/a").bucket == "theirs"


def test_no_code_but_the_tenancy_rule_turns_an_s3_uri_into_a_location():
    """The one door: a feature that parses a request's S3 URI itself would skip the rule."""
    callers = []
    for path in PROJECT.rglob("*.py"):
        relative = path.relative_to(PROJECT)
        if relative.parts[0] in ("tests", ".venv", "bench") or relative.parts[0].startswith("."):
            continue
        tree = ast.parse(path.read_text())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        if "parse_s3_uri" in names:
            callers.append(relative.as_posix())
    assert callers == ["accounts/s3_tenancy.py"]  # storage/s3.py defines it
