"""What `prepare_data_dir` writes for users: `<data>/env`, the SageMaker SDK's config file and the
kubeconfig, read back the way a shell, the SDK and the kubernetes client read them."""
import stat

import boto3
import kubernetes
import pytest
import sagemaker.config
from botocore.config import Config

from devstack.stack import (
    ServiceFailed,
    create_default_bucket,
    default_bucket_name,
    free_port,
    prepare_data_dir,
    write_sdk_config,
)
from storage import s3
from tests.conftest import read_env_file

API_URL = "http://127.0.0.1:18080"
RUNTIME_URL = "http://127.0.0.1:18081"
S3_URL = "http://127.0.0.1:18333"


def test_the_env_file_points_every_served_client_and_the_sdk_at_the_stack(db, tmp_path):
    variables = read_env_file(prepare_data_dir(tmp_path, API_URL, RUNTIME_URL, S3_URL, "eu-west-1"))

    endpoints = {name: value for name, value in variables.items() if name.startswith("AWS_ENDPOINT_URL")}
    assert endpoints == {
        "AWS_ENDPOINT_URL": API_URL,  # every other service: refused by the API, never sent to AWS
        "AWS_ENDPOINT_URL_SAGEMAKER": API_URL,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": RUNTIME_URL,
        "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": API_URL,
        "AWS_ENDPOINT_URL_CLOUDWATCH": API_URL,
        "AWS_ENDPOINT_URL_STS": API_URL,
        "AWS_ENDPOINT_URL_IAM": API_URL,
        "AWS_ENDPOINT_URL_S3": S3_URL,
    }
    assert variables["AWS_DEFAULT_REGION"] == "eu-west-1"
    assert variables["SAGEMAKER_VALIDATE_ROLE"] == "false"
    assert variables["SAGEMAKER_USER_CONFIG_OVERRIDE"] == str(tmp_path / "sagemaker-config.yaml")
    assert stat.S_IMODE((tmp_path / "env").stat().st_mode) == 0o600  # it holds a secret key


def test_the_kubeconfig_gives_the_kubernetes_client_the_api_and_the_default_key(db, tmp_path):
    variables = read_env_file(prepare_data_dir(tmp_path, API_URL, RUNTIME_URL, S3_URL, "eu-west-1"))
    configuration = kubernetes.client.Configuration()

    kubernetes.config.load_kube_config(variables["KUBECONFIG"], client_configuration=configuration)

    assert variables["KUBECONFIG"] == str((tmp_path / "kubeconfig").resolve())
    assert configuration.host == API_URL
    token = f"{variables['AWS_ACCESS_KEY_ID']}.{variables['AWS_SECRET_ACCESS_KEY']}"
    assert configuration.api_key == {"authorization": f"Bearer {token}"}
    _contexts, current = kubernetes.config.list_kube_config_contexts(config_file=variables["KUBECONFIG"])
    assert current["context"]["namespace"] == "default"
    assert stat.S_IMODE((tmp_path / "kubeconfig").stat().st_mode) == 0o600


def test_the_sdk_reads_its_default_bucket_and_telemetry_opt_out_from_sageports_file(tmp_path, monkeypatch):
    path = write_sdk_config(tmp_path / "sagemaker-config.yaml", "sagemaker-eu-west-1-123456789012")
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(path))

    modules = sagemaker.config.load_sagemaker_config()["SageMaker"]["PythonSDK"]["Modules"]  # schema-checked

    assert modules["Session"]["DefaultS3Bucket"] == "sagemaker-eu-west-1-123456789012"
    assert modules["TelemetryOptOut"] is True


def test_the_default_bucket_is_named_as_the_sdk_would_name_it():
    assert default_bucket_name("eu-west-1", "123456789012") == "sagemaker-eu-west-1-123456789012"


def test_an_unreachable_s3_is_a_clear_start_up_failure(tmp_path, monkeypatch):
    write_sdk_config(tmp_path / "sagemaker-config.yaml", "sagemaker-eu-west-1-123456789012")
    unreachable = boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{free_port()}", region_name="eu-west-1",
        aws_access_key_id="x", aws_secret_access_key="y",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    monkeypatch.setattr(s3, "get_client", lambda: unreachable)

    with pytest.raises(ServiceFailed, match="cannot create the SDK's default bucket sagemaker-eu-west-1-"):
        create_default_bucket(tmp_path)
