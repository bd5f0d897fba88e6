"""The config files a training container finds under /opt/ml/input/config."""

from logs.container_logs import rfc3339_to_ms
from training import workspace


def channel(name: str, **extra) -> dict:
    entry = {
        "ChannelName": name,
        "InputMode": "File",
        "RecordWrapperType": "None",
        "CompressionType": "None",
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": "s3://b/p",
                "S3DataDistributionType": "FullyReplicated",
            }
        },
    }
    entry.update(extra)
    return entry


def test_inputdataconfig_lists_only_the_keys_that_apply_to_each_channel():
    request = {"InputDataConfig": [channel("train", ContentType="text/csv"), channel("validation")]}
    assert workspace.input_data_config(request) == {
        "train": {
            "ContentType": "text/csv",
            "TrainingInputMode": "File",
            "S3DistributionType": "FullyReplicated",
            "RecordWrapperType": "None",
        },
        "validation": {
            "TrainingInputMode": "File",
            "S3DistributionType": "FullyReplicated",
            "RecordWrapperType": "None",
        },
    }


def test_resourceconfig_names_the_current_host_among_sorted_hosts():
    request = {"ResourceConfig": {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 3}}
    hosts = workspace.host_names(3)
    config = workspace.resource_config(request, "algo-2", hosts)
    assert config["current_host"] == "algo-2"
    assert config["hosts"] == ["algo-1", "algo-2", "algo-3"]
    assert config["current_instance_type"] == "ml.p3.2xlarge"
    assert config["instance_groups"][0]["hosts"] == hosts


def test_host_names_sort_lexicographically_as_sagemaker_lists_them():
    assert workspace.host_names(11)[:3] == ["algo-1", "algo-10", "algo-11"]


def test_engine_timestamps_keep_millisecond_precision():
    assert rfc3339_to_ms("2026-11-22T03:01:02.123456789Z") == 1795316462123
    assert rfc3339_to_ms("2026-11-22T03:01:02Z") == 1795316462000
