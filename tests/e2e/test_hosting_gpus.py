"""GPUs of serving containers end to end: the test node declares four GPUs (tests/settings.py,
env-only mode: the container's NVIDIA_VISIBLE_DEVICES selects them). Serving containers of NVIDIA
types get their own devices, never shared with training jobs; a fleet that cannot have its GPUs
fails clearly (create: Failed; update: rolled back; capacity change: not applied); a deleted
endpoint gives its GPUs back; an engine that fails each start through its own fault is retried
before a new endpoint fails."""

import docker

from runtime import labels
from tests.e2e.conftest import unique_name, wait_for_status
from tests.e2e.hosting import invoke_json, unique, wait_for_endpoint
from tests.e2e.test_training_gpus import devices_of, gpu_job, second_node

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, serve_image, probe_image


def gpu_config(sagemaker, model: str, *variants: tuple[str, str, int]) -> str:
    """An endpoint config from (variant name, instance type, instance count) tuples, one model."""
    name = unique("config")
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": variant,
                "ModelName": model,
                "InstanceType": instance_type,
                "InitialInstanceCount": count,
                "InitialVariantWeight": 1.0,
            }
            for variant, instance_type, count in variants
        ],
    )
    return name


def visible_devices(sagemaker, endpoint: str) -> dict[str, str]:
    """Variant → NVIDIA_VISIBLE_DEVICES of its container, as Docker was asked to run it (and that
    no DeviceRequest was made, in this mode)."""
    arn = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointArn"]
    found = {}
    for container in docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"}):
        assert container.attrs["HostConfig"]["DeviceRequests"] is None
        env = dict(entry.split("=", 1) for entry in container.attrs["Config"]["Env"])
        found[container.labels[labels.VARIANT]] = env["NVIDIA_VISIBLE_DEVICES"]
    return found


def test_gpu_endpoints_hold_their_own_gpus_and_give_them_back_when_deleted(
    sagemaker, s3, bucket, hosting, probe_image, shell_algo_image
):
    # The model asks for every GPU: it gets only what the instance type holds.
    model = hosting.model(probe_image, {"NVIDIA_VISIBLE_DEVICES": "all"})
    config = gpu_config(sagemaker, model, ("Gpu", "ml.g5.xlarge", 1), ("Cpu", "ml.m5.large", 1))
    mixed = hosting.endpoint(config)
    wait_for_endpoint(sagemaker, mixed)

    assert visible_devices(sagemaker, mixed) == {"Gpu": "0", "Cpu": "void"}

    beside = unique_name("beside")  # two instances of one GPU each, while the endpoint holds GPU 0
    request = gpu_job(beside, shell_algo_image, bucket, "ml.p3.2xlarge", count=2, seconds=10)
    sagemaker.create_training_job(**request)
    wait_for_status(sagemaker, beside, statuses={"Training"})
    four = hosting.endpoint(gpu_config(sagemaker, model, ("AllTraffic", "ml.g5.12xlarge", 1)))
    failed = wait_for_endpoint(sagemaker, four, statuses={"Failed"})
    assert failed["FailureReason"] == (
        "ResourceLimitExceeded: production variant AllTraffic (ml.g5.12xlarge) needs 4 NVIDIA GPUs "
        "for 1 more container (4 each, each on one node); GPUs free: test-node-a has 1 of its 4."
    )
    assert wait_for_status(sagemaker, beside, timeout=120)["TrainingJobStatus"] == "Completed"
    assert devices_of(s3, bucket, beside) == {"algo-1": "1", "algo-2": "2"}

    sagemaker.delete_endpoint(EndpointName=mixed)
    sagemaker.get_waiter("endpoint_deleted").wait(
        EndpointName=mixed, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    after = unique_name("after")  # all four GPUs: free again
    sagemaker.create_training_job(**gpu_job(after, shell_algo_image, bucket, "ml.g5.12xlarge"))
    job = wait_for_status(sagemaker, after, timeout=120)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert devices_of(s3, bucket, after) == {"algo-1": "0,1,2,3"}


def test_changes_needing_more_gpus_than_are_free_are_not_applied_and_the_fleet_keeps_serving(
    sagemaker, runtime, hosting, probe_image
):
    model = hosting.model(probe_image, {"PROBE_TAG": "one-gpu"})
    name = hosting.endpoint(gpu_config(sagemaker, model, ("AllTraffic", "ml.g5.xlarge", 1)))
    wait_for_endpoint(sagemaker, name)

    sagemaker.update_endpoint_weights_and_capacities(
        EndpointName=name,
        DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredInstanceCount": 5}],
    )
    scaled = wait_for_endpoint(sagemaker, name)
    assert scaled["FailureReason"] == (
        "The capacity change was not applied: ResourceLimitExceeded: production variant AllTraffic "
        "(ml.g5.xlarge) needs 4 NVIDIA GPUs for 4 more containers (1 each, each on one node); GPUs "
        "free: test-node-a has 3 of its 4."
    )
    assert scaled["ProductionVariants"][0]["DesiredInstanceCount"] == 1

    # Blue/green needs both fleets at once: four more GPUs while the old fleet holds one.
    bigger = gpu_config(sagemaker, model, ("AllTraffic", "ml.g5.12xlarge", 1))
    sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=bigger)
    updated = wait_for_endpoint(sagemaker, name)
    assert updated["FailureReason"].startswith(
        f"The update to endpoint configuration {bigger} was rolled back: ResourceLimitExceeded: "
        "production variant AllTraffic (ml.g5.12xlarge) needs 4 NVIDIA GPUs"
    )
    assert invoke_json(runtime, name)["tag"] == "one-gpu"
    assert visible_devices(sagemaker, name) == {"AllTraffic": "0"}


def test_an_engine_failing_every_start_by_a_fault_of_its_own_is_retried_then_fails_a_new_endpoint(
    stack, sagemaker, hosting, probe_image
):
    """As for training jobs (test_training_gpus): a node whose engine has no NVIDIA runtime, in
    the default device-request mode, answers each start with its 500 (no device driver). That is
    the platform's fault, not the model's: other containers are started, and the endpoint fails
    only at the third."""
    model = hosting.model(probe_image)
    with second_node(stack, SAGEPORT_GPU_DEVICE_MODE="device-request"):  # the only node of 8 GPUs
        name = hosting.endpoint(gpu_config(sagemaker, model, ("AllTraffic", "ml.p3.16xlarge", 1)))
        failed = wait_for_endpoint(sagemaker, name, statuses={"Failed"})

    assert failed["FailureReason"].startswith("The container ")
    assert "for production variant AllTraffic could not be started (3 faults of the engine in a row): " in (
        failed["FailureReason"]
    )
    assert 'could not select device driver "nvidia" with capabilities: [[gpu]]' in failed["FailureReason"]
