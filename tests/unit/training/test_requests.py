"""Cross-field rules of CreateTrainingJob that the botocore shape cannot express."""

import pytest

from protocol.errors import ValidationException
from training.requests import check_create_request, with_defaults


def request(**overrides) -> dict:
    base = {
        "TrainingJobName": "j",
        "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
    }
    base.update(overrides)
    return base


def problems_of(params: dict) -> str:
    with pytest.raises(ValidationException) as caught:
        check_create_request(params)
    return caught.value.message


def test_a_complete_request_passes():
    check_create_request(request())


def test_unknown_instance_type_is_refused():
    params = request(ResourceConfig={"InstanceType": "ml.zz9.huge", "InstanceCount": 1})
    assert "ml.zz9.huge" in problems_of(params)


def test_duplicate_channel_names_and_non_s3_output_are_all_reported():
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}
    params = request(
        InputDataConfig=[{"ChannelName": "train", "DataSource": source}] * 2,
        OutputDataConfig={"S3OutputPath": "https://example.invalid/out"},
    )
    message = problems_of(params)
    assert "repeated: train" in message and "S3OutputPath" in message


def test_invalid_metric_regex_is_refused_at_create_time():
    algorithm = {
        "TrainingImage": "img",
        "TrainingInputMode": "File",
        "MetricDefinitions": [{"Name": "loss", "Regex": "loss=("}],
    }
    assert "loss" in problems_of(request(AlgorithmSpecification=algorithm))


def test_features_not_carried_out_are_refused_rather_than_ignored():
    params = request(VpcConfig={"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-1"]})
    assert "VpcConfig is not supported" in problems_of(params)


def test_pipe_mode_and_checkpoints_are_accepted():
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}
    check_create_request(request(
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "Pipe"},
        InputDataConfig=[{"ChannelName": "train", "DataSource": source, "InputMode": "FastFile"}],
        CheckpointConfig={"S3Uri": "s3://b/ckpt", "LocalPath": "/opt/ml/checkpoints"},
    ))


@pytest.mark.parametrize("local_path", ["relative/dir", "/opt/ml/model/ckpt", "/opt/ml", "/", "/ckpt/../opt"])
def test_checkpoint_local_path_must_be_absolute_and_apart_from_the_platform_mounts(local_path):
    message = problems_of(request(CheckpointConfig={"S3Uri": "s3://b/ckpt", "LocalPath": local_path}))
    assert "CheckpointConfig.LocalPath" in message


def test_checkpoint_s3_uri_must_be_an_s3_uri():
    assert "CheckpointConfig.S3Uri" in problems_of(request(CheckpointConfig={"S3Uri": "https://h/b/ckpt"}))


def test_defaults_are_filled_as_describe_shows_them():
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}
    stored = with_defaults(request(InputDataConfig=[{"ChannelName": "train", "DataSource": source}], Tags=[]))
    assert "Tags" not in stored
    assert stored["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert stored["OutputDataConfig"]["CompressionType"] == "GZIP"
    assert stored["InputDataConfig"][0]["InputMode"] == "File"
    assert (
        stored["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3DataDistributionType"]
        == "FullyReplicated"
    )


def test_recordio_wrapping_is_refused_rather_than_ignored():
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}
    channel = {"ChannelName": "train", "DataSource": source, "RecordWrapperType": "RecordIO"}
    assert "RecordWrapperType RecordIO" in problems_of(request(InputDataConfig=[channel]))


@pytest.mark.parametrize("name", [".", ".."])
def test_channel_names_that_cannot_be_directories_are_refused(name):
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}}
    channels = [{"ChannelName": "train", "DataSource": source}, {"ChannelName": name, "DataSource": source}]
    assert problems_of(request(InputDataConfig=channels)) == (
        f"Value '{name}' at 'inputDataConfig.2.member.channelName' failed to satisfy constraint: "
        "Member must not be '.' or '..' (a channel is the directory /opt/ml/input/data/<ChannelName>)."
    )


def test_channel_names_with_dots_inside_are_directories_and_pass():
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}}
    check_create_request(request(InputDataConfig=[{"ChannelName": "..train.v2", "DataSource": source}]))
