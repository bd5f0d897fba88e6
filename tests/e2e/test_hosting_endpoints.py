"""Endpoints end to end: serving containers get SageMaker's contract, InvokeEndpoint reaches them,
and the endpoint's shape and lifecycle are what boto3 and its waiters expect."""

import io
import json
import os
import tarfile

import docker
import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import read_tar_gz, training_request, unique_name, wait_for_status
from tests.e2e.hosting import NO_RETRIES, invoke_json, wait_for_endpoint, wait_until
from tests.tar_archives import tar_gz

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, serve_image, probe_image


def _put_tar_gz(s3, bucket: str, key: str, files: dict[str, bytes]) -> str:
    s3.put_object(Bucket=bucket, Key=key, Body=tar_gz(files))
    return f"s3://{bucket}/{key}"


def test_trained_model_is_deployed_and_predicts_from_its_coefficients(
    sagemaker, runtime, s3, bucket, python_image, serve_image
):
    rows = "\n".join(
        f"{x},{y},{2 * x - 3 * y + 5}" for x, y in [(0, 0), (1, 0), (0, 1), (2, 3), (4, 1), (3, 3)]
    )
    s3.put_object(Bucket=bucket, Key="data/train/rows.csv", Body=rows.encode())
    job_name = unique_name("fit")
    sagemaker.create_training_job(
        **training_request(
            job_name,
            python_image,
            bucket,
            InputDataConfig=[
                {
                    "ChannelName": "train",
                    "DataSource": {
                        "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/data/train/"}
                    },
                }
            ],
        )
    )
    job = wait_for_status(sagemaker, job_name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    artifacts = job["ModelArtifacts"]["S3ModelArtifacts"]
    model = json.loads(read_tar_gz(s3, bucket, artifacts.split(bucket + "/", 1)[1])["model.json"])

    model_name = unique_name("linear")
    sagemaker.create_model(
        ModelName=model_name, PrimaryContainer={"Image": serve_image, "ModelDataUrl": artifacts}
    )
    config_name = unique_name("linear-config")
    sagemaker.create_endpoint_config(
        EndpointConfigName=config_name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": model_name,
                "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large",
            }
        ],
    )
    name = unique_name("Linear")
    arn = sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=config_name)["EndpointArn"]
    assert arn == f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{name.lower()}"
    sagemaker.get_waiter("endpoint_in_service").wait(
        EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )

    response = runtime.invoke_endpoint(EndpointName=name, Body=b"1.5,-2\n0,0\n", ContentType="text/csv")
    predictions = [float(line) for line in response["Body"].read().decode().split()]
    expected = [
        sum(w * x for w, x in zip(model["coefficients"], features, strict=True)) + model["intercept"]
        for features in ([1.5, -2.0], [0.0, 0.0])
    ]
    assert predictions == pytest.approx(expected)
    assert predictions == pytest.approx([2 * 1.5 + 3 * 2 + 5, 5], abs=1e-6)
    assert response["ContentType"] == "text/csv"
    assert response["InvokedProductionVariant"] == "AllTraffic"

    described = sagemaker.describe_endpoint(EndpointName=name)
    assert described["EndpointStatus"] == "InService"
    assert described["EndpointConfigName"] == config_name
    [variant] = described["ProductionVariants"]
    assert variant["VariantName"] == "AllTraffic"
    assert variant["CurrentInstanceCount"] == variant["DesiredInstanceCount"] == 1
    assert variant["CurrentWeight"] == variant["DesiredWeight"] == 1.0
    assert variant["DeployedImages"][0]["SpecifiedImage"] == serve_image
    assert variant["DeployedImages"][0]["ResolvedImage"].startswith("sageport-examples/python-serve@sha256:")
    assert "PendingDeploymentSummary" not in described

    sagemaker.delete_endpoint(EndpointName=name)
    sagemaker.get_waiter("endpoint_deleted").wait(
        EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_endpoint(EndpointName=name)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    # SageMaker names the ARN (amazon-sagemaker-examples issue 2402).
    arn = described["EndpointArn"]
    assert raised.value.response["Error"]["Message"] == f'Could not find endpoint "{arn}".'


def test_serving_container_gets_the_sagemaker_contract(
    stack, sagemaker, runtime, s3, bucket, probe_image, hosting
):
    model_url = _put_tar_gz(s3, bucket, "models/probe.tar.gz", {"weights.bin": b"w", "sub/meta.json": b"{}"})
    model = hosting.model(
        probe_image, {"USER_SETTING": "kept"}, ModelDataUrl=model_url, ContainerHostname="model-host"
    )
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)

    response = runtime.invoke_endpoint(
        EndpointName=name,
        Body=b"{}",
        ContentType="application/json",
        Accept="application/json",
        CustomAttributes="trace=1",
        InferenceId="inference-7",
    )
    report = json.loads(response["Body"].read())
    assert report["argv"] == ["serve"]
    assert report["hostname"] == "model-host"
    assert report["environment"] == {"USER_SETTING": "kept"}
    assert report["model_files"] == ["sub/meta.json", "weights.bin"]
    assert report["model_writable"] is False
    forwarded = set(report["headers"]) - {"host", "accept-encoding", "content-length"}
    assert forwarded == {
        "content-type",
        "accept",
        "x-amzn-sagemaker-custom-attributes",
        "x-amzn-sagemaker-inference-id",
        "user-agent",
    }
    assert report["headers"]["x-amzn-sagemaker-inference-id"] == "inference-7"
    # SageMaker's hosting sends its own User-Agent on both (containers' access logs show
    # "AHC/2.0" on GET /ping and POST /invocations: aws/sagemaker-python-sdk#1554).
    assert report["headers"]["user-agent"] == "AHC/2.0"
    assert report["ping_user_agents"] == ["AHC/2.0"]
    # ml.m5.large has 2 vCPUs: the container runs on 2 of the node's CPUs (all of them on a smaller
    # node), which Python 3.13+ counts through PYTHON_CPU_COUNT (runtime/cpusets.py).
    cpus = min(2, os.cpu_count())
    assert (report["affinity_cpus"], report["python_cpu_count"]) == (cpus, str(cpus))
    # The same through the API port's view (what clients given a single endpoint URL reach).
    through_api = stack.client("sagemaker-runtime", endpoint_url=stack.endpoint_url)
    answer = through_api.invoke_endpoint(EndpointName=name, Body=b"{}", ContentType="application/json")
    assert json.loads(answer["Body"].read())["headers"]["user-agent"] == "AHC/2.0"
    assert response["ContentType"] == "application/json"
    assert response["CustomAttributes"] == "trace=1"
    assert response["InvokedProductionVariant"] == "AllTraffic"


def test_uncompressed_model_prefix_is_copied_under_opt_ml_model(
    sagemaker, runtime, s3, bucket, probe_image, hosting
):
    for key in ("models/raw/config.json", "models/raw/shards/0.bin", "models/rawer/not-mine.bin"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    source = {"S3Uri": f"s3://{bucket}/models/raw/", "S3DataType": "S3Prefix", "CompressionType": "None"}
    model = hosting.model(probe_image, ModelDataSource={"S3DataSource": source})
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)

    assert invoke_json(runtime, name)["model_files"] == ["config.json", "shards/0.bin"]


def test_two_variants_share_traffic_by_weight_and_target_variant_selects_one(
    sagemaker, runtime, stack, probe_image, hosting
):
    heavy = hosting.model(probe_image, {"PROBE_TAG": "heavy"})
    light = hosting.model(probe_image, {"PROBE_TAG": "light"})
    name = hosting.endpoint(hosting.config(("Heavy", heavy, 1, 3.0), ("Light", light, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)

    answers = [invoke_json(runtime, name) for _ in range(120)]
    heavy_share = sum(answer["variant"] == "Heavy" for answer in answers) / len(answers)
    assert 0.6 < heavy_share < 0.9  # 0.75 expected; the bounds are ~4 standard deviations wide
    assert all(answer["tag"] == answer["variant"].lower() for answer in answers)

    targeted = [invoke_json(runtime, name, TargetVariant="Light") for _ in range(10)]
    assert {answer["tag"] for answer in targeted} == {"light"}
    variants = sagemaker.describe_endpoint(EndpointName=name)["ProductionVariants"]
    assert {(v["VariantName"], v["CurrentWeight"], v["CurrentInstanceCount"]) for v in variants} == {
        ("Heavy", 3.0, 1),
        ("Light", 1.0, 1),
    }

    # A weight change reaches the running data plane (no restart): soon every request goes to Light.
    data_plane = stack.supervisor.pid("runtime")
    sagemaker.update_endpoint_weights_and_capacities(
        EndpointName=name, DesiredWeightsAndCapacities=[{"VariantName": "Heavy", "DesiredWeight": 0.0}]
    )
    wait_until(
        lambda: {invoke_json(runtime, name)["variant"] for _ in range(10)} == {"Light"},
        timeout=30,
        what="the data plane routes by the new weights",
    )
    assert stack.supervisor.pid("runtime") == data_plane


def _runtime_error(call) -> dict:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response


def test_runtime_errors_follow_the_sagemaker_runtime_protocol(
    sagemaker, runtime, stack, probe_image, hosting
):
    missing = _runtime_error(lambda: runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"{}"))
    # The runtime names the endpoint as given, not its ARN (amazon-sagemaker-examples issue 293:
    # "ValidationError … InvokeEndpoint operation: Endpoint DEMO-… of account 548009560556 not found.").
    assert missing["Error"]["Code"] == "ValidationError"
    assert missing["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert (
        missing["Error"]["Message"] == f"Endpoint no-such-endpoint of account {stack.account_id} not found."
    )

    name = hosting.probe_endpoint(probe_image)
    failed = _runtime_error(lambda: invoke_json(runtime, name, {"status": 422, "message": "bad feature"}))
    assert failed["Error"]["Code"] == "ModelError"
    assert failed["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert failed["OriginalStatusCode"] == 422
    assert failed["OriginalMessage"] == "bad feature"
    # SageMaker's ModelError names the endpoint's log *group* in LogStreamArn, whatever the member's
    # name: a captured answer, `{"ErrorCode":"CLIENT_ERROR_FROM_MODEL","LogStreamArn":"arn:aws:logs:
    # us-east-1:12345678:log-group:/aws/sagemaker/Endpoints/demo-test-name",…}` (opensearch-project/
    # skills, PPLToolTests). DescribeLogStreams' `arn` is the stream's (tests/e2e/test_logs_api.py).
    assert failed["LogStreamArn"] == (
        f"arn:aws:logs:us-east-1:{stack.account_id}:log-group:/aws/sagemaker/Endpoints/{name}"
    )
    assert "Received client error (422) from primary" in failed["Error"]["Message"]

    slow = _runtime_error(lambda: invoke_json(runtime, name, {"sleep": 6}))  # the test timeout is 4 s
    assert slow["Error"]["Code"] == "ModelError"
    assert slow["OriginalStatusCode"] == 0
    assert "timed out" in slow["OriginalMessage"]

    too_big = _runtime_error(
        lambda: runtime.invoke_endpoint(EndpointName=name, Body=b"x" * (6 * 1024 * 1024 + 1))
    )
    assert too_big["Error"]["Code"] == "ValidationError"
    assert "6291456" in too_big["Error"]["Message"]

    unknown_variant = _runtime_error(lambda: invoke_json(runtime, name, TargetVariant="Nope"))
    assert unknown_variant["Error"]["Code"] == "ValidationError"

    bad_name = _runtime_error(lambda: runtime.invoke_endpoint(EndpointName="bad_name", Body=b"{}"))
    assert bad_name["Error"]["Code"] == "ValidationError"
    assert "regular expression pattern" in bad_name["Error"]["Message"]

    assert invoke_json(runtime, name)["tag"] == "blue"  # none of it harmed the endpoint
    # The API's port answers too (containers reach only the API, through their forwarder).
    through_the_api = stack.client("sagemaker-runtime", endpoint_url=stack.endpoint_url, config=NO_RETRIES)
    assert invoke_json(through_the_api, name)["tag"] == "blue"


def test_invoking_an_endpoint_that_is_not_in_service_is_a_validation_error(
    sagemaker, runtime, probe_image, hosting
):
    model = hosting.model(probe_image, {"PROBE_PING": "fail"})
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    creating = _runtime_error(lambda: invoke_json(runtime, name))
    assert creating["Error"]["Code"] == "ValidationError"
    assert "not InService" in creating["Error"]["Message"]


def test_model_archive_with_a_path_escaping_member_fails_the_endpoint(
    sagemaker, s3, bucket, probe_image, hosting
):
    url = _put_tar_gz(s3, bucket, "models/evil.tar.gz", {"../../escaped.txt": b"gotcha", "ok.txt": b"fine"})
    name = hosting.endpoint(
        hosting.config(("AllTraffic", hosting.model(probe_image, ModelDataUrl=url), 1, 1.0))
    )

    endpoint = wait_for_endpoint(sagemaker, name, statuses={"Failed"})

    assert "Refusing archive member '../../escaped.txt'" in endpoint["FailureReason"]
    assert "s3://" in endpoint["FailureReason"]


def test_model_archive_whose_links_chain_outside_the_model_dir_fails_the_endpoint(
    sagemaker, s3, bucket, probe_image, hosting
):
    # `up` is harmless when extracted (`here` does not exist yet); `here` then makes it `..`.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, target in [("up", "here/.."), ("here", ".")]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    s3.put_object(Bucket=bucket, Key="models/chained.tar.gz", Body=buffer.getvalue())
    url = f"s3://{bucket}/models/chained.tar.gz"
    name = hosting.endpoint(
        hosting.config(("AllTraffic", hosting.model(probe_image, ModelDataUrl=url), 1, 1.0))
    )

    endpoint = wait_for_endpoint(sagemaker, name, statuses={"Failed"})

    reason = endpoint["FailureReason"]
    assert "Refusing archive member 'up': it links to 'here/..', outside the destination" in reason


def test_endpoint_whose_container_never_becomes_healthy_fails_naming_what_it_answered(
    sagemaker, probe_image, hosting
):
    model = hosting.model(probe_image, {"PROBE_PING": "fail"})
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))

    endpoint = wait_for_endpoint(sagemaker, name, statuses={"Failed"}, timeout=60)

    reason = endpoint["FailureReason"]
    assert "for production variant AllTraffic did not pass the ping health check within 8 s" in reason
    assert "/ping answered HTTP 503: the probe was told never to become healthy" in reason
    assert "ProductionVariants" not in endpoint
    with pytest.raises(ClientError) as raised:
        sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=endpoint["EndpointConfigName"])
    assert raised.value.response["Error"]["Code"] == "ValidationException"


def test_endpoint_whose_container_exits_at_start_fails_with_its_exit_code_and_output(
    sagemaker, probe_image, hosting
):
    model = hosting.model(probe_image, {"PROBE_PING": "exit"})
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))

    reason = wait_for_endpoint(sagemaker, name, statuses={"Failed"}, timeout=60)["FailureReason"]

    assert "exited with code 3 before passing /ping" in reason
    assert "probe: exiting at start, as told" in reason


def test_killed_container_is_replaced_while_traffic_avoids_it(sagemaker, runtime, probe_image, hosting):
    name = hosting.probe_endpoint(probe_image, count=2)
    arn = sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]
    assert len({invoke_json(runtime, name)["hostname"] for _ in range(20)}) == 2
    victim = docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})[0]
    victim.kill()

    # Sequential requests keep succeeding: a refused connection is retried on the other container.
    answered_by = {invoke_json(runtime, name)["hostname"] for _ in range(20)}
    assert victim.id[:12] not in answered_by

    def replaced() -> bool:
        variant = sagemaker.describe_endpoint(EndpointName=name)["ProductionVariants"][0]
        hostnames = {invoke_json(runtime, name)["hostname"] for _ in range(20)}
        return (
            variant["CurrentInstanceCount"] == 2 and len(hostnames) == 2 and victim.id[:12] not in hostnames
        )

    wait_until(replaced, timeout=60, what="a replacement container")
    assert sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService"
