"""Blue/green updates and scaling, end to end: traffic moves as the DeploymentConfig says, a
failed update leaves the old fleet serving, and no request fails while containers come and go
(the load loops use a runtime client without retries, so every failure is counted)."""

import docker
import pytest
from botocore.exceptions import ClientError

from tests.e2e.hosting import Load, invoke_json, wait_for_endpoint, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, probe_image


def _probe_config(hosting, image: str, tag: str, count: int, **environment) -> str:
    return hosting.config(("AllTraffic", hosting.model(image, {"PROBE_TAG": tag, **environment}), count, 1.0))


def _containers_of(sagemaker, name: str) -> list:
    arn = sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]
    # ignore_removed: a container drained away between the listing and its inspection is gone.
    selector = {"label": f"sageport.resource={arn}"}
    return docker.from_env().containers.list(all=True, filters=selector, ignore_removed=True)


def _wait_for_update(sagemaker, name: str) -> dict:
    wait_until(
        lambda: sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"] == "Updating",
        timeout=10,
        what="Updating",
    )
    return wait_for_endpoint(sagemaker, name, timeout=120)


def test_update_under_load_moves_all_traffic_to_the_new_fleet_without_a_failed_request(
    sagemaker, stack, runtime, probe_image, hosting
):
    name = hosting.probe_endpoint(probe_image, count=2, tag="blue")
    green = _probe_config(hosting, probe_image, "green", 2)

    with Load(stack, name) as load:
        wait_until(lambda: load.count >= 20, what="load before the update")
        sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=green)
        endpoint = _wait_for_update(sagemaker, name)
        seen = load.count
        wait_until(lambda: load.count >= seen + 20, what="load after the update")

    assert load.failures == []
    assert load.tags["blue"] > 0 and load.tags["green"] > 0
    assert endpoint["EndpointConfigName"] == green
    assert "FailureReason" not in endpoint and "PendingDeploymentSummary" not in endpoint
    assert {invoke_json(runtime, name)["tag"] for _ in range(10)} == {"green"}
    wait_until(lambda: len(_containers_of(sagemaker, name)) == 2, what="the old fleet to be removed")


def test_scaling_down_drains_without_a_failed_request_and_updates_can_retain_the_new_capacity(
    sagemaker, stack, runtime, probe_image, hosting
):
    name = hosting.probe_endpoint(probe_image, count=3)

    with Load(stack, name) as load:
        wait_until(lambda: load.count >= 20, what="load before scaling down")
        sagemaker.update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredInstanceCount": 1}],
        )
        endpoint = _wait_for_update(sagemaker, name)
        seen = load.count
        wait_until(lambda: load.count >= seen + 20, what="load after scaling down")

    assert load.failures == []
    [variant] = endpoint["ProductionVariants"]
    assert variant["CurrentInstanceCount"] == variant["DesiredInstanceCount"] == 1
    assert len(_containers_of(sagemaker, name)) == 1

    bigger = _probe_config(hosting, probe_image, "green", 3)
    sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=bigger, RetainAllVariantProperties=True)
    [variant] = _wait_for_update(sagemaker, name)["ProductionVariants"]
    assert variant["DesiredInstanceCount"] == variant["CurrentInstanceCount"] == 1  # retained, not 3


@pytest.mark.parametrize(
    ("routing", "instances", "expected_steps"),
    [
        ({"Type": "CANARY", "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1}}, 2, ["50%", "Baking"]),
        (
            {"Type": "LINEAR", "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 34}},
            3,
            ["66.6667%", "Baking"],
        ),
        (
            {"Type": "LINEAR", "LinearStepSize": {"Type": "INSTANCE_COUNT", "Value": 1}},
            3,
            ["33.3333%", "66.6667%", "Baking"],
        ),
    ],
    ids=["canary", "linear-percent", "linear-instances"],
)
def test_blue_green_update_shifts_traffic_step_by_step(
    sagemaker, runtime, probe_image, hosting, routing, instances, expected_steps
):
    name = hosting.probe_endpoint(probe_image, count=1, tag="blue")
    green = _probe_config(hosting, probe_image, "green", instances)
    deployment_config = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {**routing, "WaitIntervalInSeconds": 3},
            "TerminationWaitInSeconds": 2,
        }
    }

    sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=green, DeploymentConfig=deployment_config)
    steps, mixed = [], False
    while (endpoint := sagemaker.describe_endpoint(EndpointName=name))["EndpointStatus"] == "Updating":
        pending = endpoint.get("PendingDeploymentSummary")
        if pending:
            [status] = pending["ProductionVariants"][0]["VariantStatus"]
            step = (
                status["Status"]
                if status["Status"] != "ActivatingTraffic"
                else status["StatusMessage"].split()[0]
            )
            if step not in steps and step != "Creating":
                steps.append(step)
            if status["Status"] == "ActivatingTraffic" and not mixed:
                mixed = {invoke_json(runtime, name)["tag"] for _ in range(30)} == {"blue", "green"}
        assert len(steps) <= len(expected_steps), steps

    assert endpoint["EndpointStatus"] == "InService", endpoint.get("FailureReason")
    assert steps == expected_steps
    assert mixed, "while traffic was being shifted, both fleets answered"
    assert endpoint["EndpointConfigName"] == green
    assert endpoint["LastDeploymentConfig"] == deployment_config
    assert {invoke_json(runtime, name)["tag"] for _ in range(10)} == {"green"}


def test_failed_update_rolls_back_while_the_old_fleet_keeps_serving(
    sagemaker, stack, runtime, probe_image, hosting
):
    name = hosting.probe_endpoint(probe_image, count=1, tag="blue")
    blue = sagemaker.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    broken = _probe_config(hosting, probe_image, "broken", 1, PROBE_PING="fail")

    with Load(stack, name, threads=2) as load:
        sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=broken)
        endpoint = _wait_for_update(sagemaker, name)

    assert load.failures == []
    assert set(load.tags) == {"blue"}
    assert endpoint["EndpointConfigName"] == blue
    assert endpoint["FailureReason"].startswith(
        f"The update to endpoint configuration {broken} was rolled back:"
    )
    assert "did not pass the ping health check" in endpoint["FailureReason"]
    wait_until(lambda: len(_containers_of(sagemaker, name)) == 1, what="the broken fleet to be removed")


def test_changes_are_refused_while_an_update_is_in_progress(sagemaker, probe_image, hosting):
    name = hosting.probe_endpoint(probe_image)
    green = _probe_config(hosting, probe_image, "green", 1)
    sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=green)

    for change in (
        lambda: sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=green),
        lambda: sagemaker.delete_endpoint(EndpointName=name),
        lambda: sagemaker.update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredWeight": 2.0}],
        ),
    ):
        with pytest.raises(ClientError) as raised:
            change()
        assert raised.value.response["Error"]["Code"] == "ValidationException"
        assert raised.value.response["Error"]["Message"] == (
            f'Cannot update in-progress endpoint "arn:aws:sagemaker:us-east-1:123456789012:endpoint/{name}".'
        )
    wait_for_endpoint(sagemaker, name)
