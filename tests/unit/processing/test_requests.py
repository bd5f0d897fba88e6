"""Cross-field rules of CreateProcessingJob that the botocore shape cannot express (botocore's
ProcessingS3Input documentation: LocalPath "must begin with /opt/ml/processing/"; "Gzip can only be
used when Pipe mode is specified as the S3InputMode")."""
import pytest

from processing.requests import check_create_request, with_defaults
from protocol.errors import ValidationException


def s3_input(name="in", local="/opt/ml/processing/input", **options) -> dict:
    source = {"S3Uri": "s3://b/in", "LocalPath": local, "S3DataType": "S3Prefix", **options}
    return {"InputName": name, "S3Input": source}


def s3_output(name="out", local="/opt/ml/processing/output") -> dict:
    return {
        "OutputName": name,
        "S3Output": {"S3Uri": "s3://b/out", "LocalPath": local, "S3UploadMode": "EndOfJob"},
    }


def request(inputs=(), outputs=(), **overrides) -> dict:
    base = {
        "ProcessingJobName": "j",
        "AppSpecification": {"ImageUri": "img"},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 1}
        },
        "ProcessingInputs": list(inputs),
        "ProcessingOutputConfig": {"Outputs": list(outputs)},
    }
    base.update(overrides)
    return base


def problems_of(params: dict) -> str:
    with pytest.raises(ValidationException) as caught:
        check_create_request(params)
    return caught.value.message


def test_a_complete_request_passes():
    check_create_request(request([s3_input()], [s3_output()]))


def test_a_dataset_definition_is_refused_with_what_to_give_instead():
    athena = {"InputName": "q", "DatasetDefinition": {"AthenaDatasetDefinition": {}}}
    message = problems_of(request([athena]))
    assert "DatasetDefinition (Athena and Redshift queries) is not supported by Sageport" in message
    assert "give an S3Input" in message


@pytest.mark.parametrize(
    "local", ["/opt/ml/input/x", "relative/x", "/opt/ml/processing", "/opt/ml/processing/../x"]
)
def test_local_paths_must_lie_under_opt_ml_processing(local):
    message = problems_of(request([s3_input(local=local)]))
    assert "must be an absolute path under /opt/ml/processing/" in message


def test_pipe_mode_with_gzip_passes():
    check_create_request(request([s3_input(S3InputMode="Pipe", S3CompressionType="Gzip")]))


def test_gzip_without_pipe_mode_is_refused_in_sagemakers_words():
    message = problems_of(request([s3_input(S3InputMode="File", S3CompressionType="Gzip")]))
    assert "S3CompressionType Gzip can only be used when S3InputMode is Pipe." in message


def test_a_pipe_inputs_fifo_directory_cannot_be_another_inputs_directory():
    """Its FIFOs `/opt/ml/processing/input/data_<epoch>` would land in the other input's files."""
    pipe = s3_input("pipe", "/opt/ml/processing/input/data", S3InputMode="Pipe")
    message = problems_of(request([pipe, s3_input("file", "/opt/ml/processing/input")]))
    assert "a Pipe input's FIFOs appear beside its LocalPath, in /opt/ml/processing/input" in message


def test_inputs_and_outputs_need_directories_of_their_own():
    data = "/opt/ml/processing/data"
    clash = request([s3_input(local=data)], [s3_output(local=data + "/")])
    message = problems_of(clash)
    assert "LocalPath '/opt/ml/processing/data' is given to more than one input or output" in message


def test_an_input_inside_another_is_allowed_as_the_sdk_sends_its_code():
    code = s3_input("code", local="/opt/ml/processing/input/code")
    check_create_request(request([s3_input(local="/opt/ml/processing/input"), code]))


def test_names_are_unique():
    message = problems_of(request([s3_input(), s3_input(local="/opt/ml/processing/other")]))
    assert "InputName must be unique; repeated: in." in message


def test_unknown_instance_types_and_vpcs_are_refused():
    params = request(NetworkConfig={"VpcConfig": {"SecurityGroupIds": ["sg"], "Subnets": ["s"]}})
    params["ProcessingResources"]["ClusterConfig"]["InstanceType"] = "ml.nope.large"
    message = problems_of(params)
    assert "InstanceType 'ml.nope.large' is not a known instance type." in message
    assert "NetworkConfig.VpcConfig is not supported" in message


def test_defaults_are_filled_as_describe_shows_them():
    stored = with_defaults(request([s3_input()], [s3_output()], Tags=[{"Key": "k", "Value": "v"}]))
    assert "Tags" not in stored
    assert stored["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert stored["ProcessingInputs"][0]["S3Input"] == {
        "S3Uri": "s3://b/in", "LocalPath": "/opt/ml/processing/input", "S3DataType": "S3Prefix",
        "S3InputMode": "File", "S3DataDistributionType": "FullyReplicated", "S3CompressionType": "None",
    }
    assert stored["ProcessingInputs"][0]["AppManaged"] is False
