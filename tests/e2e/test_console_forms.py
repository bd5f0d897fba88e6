"""The console's create forms in a real browser against the live stack: a bad value comes back as
the API's error beside its field with everything typed kept and nothing created; fixed, the form
lands on the new resource's page, and the resource is the one the Describe operation answers. The
endpoint made with the forms serves (InService, the hosting tests' probe image) and the training
job made with its form runs to Completed (the tiny shell-script image)."""

import re

import pytest
from botocore.exceptions import ClientError
from playwright.sync_api import Page, expect

from tests.e2e.conftest import unique_name
from tests.e2e.console_sign_in import sign_in

pytest_plugins = ["tests.e2e.browser", "tests.e2e.hosting_fixtures"]  # probe_image, hosting
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def page(stack, browser_context) -> Page:
    page = browser_context.new_page()
    sign_in(page, stack.endpoint_url, stack.access_key_id, stack.secret_access_key)
    return page


def open_form(page: Page, base_url: str, listing: str, title: str) -> None:
    """From the resource's list, as a user starts: the list's button to its create form."""
    page.goto(f"{base_url}/console/{listing}/")
    page.get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()


def assert_fits_a_phone(page: Page) -> None:
    """At a phone's width the page needs no sideways scrolling; back to the desktop's after."""
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size(DESKTOP)


def assert_not_found(describe, **name) -> None:
    with pytest.raises(ClientError) as raised:
        describe(**name)
    assert raised.value.response["Error"]["Code"] == "ValidationException"


def test_the_model_form_shows_a_bad_name_beside_it_then_creates_the_model(
    stack, sagemaker, bucket, page, screenshot_dir
):
    open_form(page, stack.endpoint_url, "models", "Create model")

    name = unique_name("console-form")
    model_data = f"s3://{bucket}/models/model.tar.gz"
    role = f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"
    page.get_by_label("Model name").fill(name.replace("-", "_"))  # `_` breaks the name's pattern
    page.get_by_label("Container image").fill("sageport/python-serve:latest")
    page.get_by_label("Model data URL").fill(model_data)
    page.get_by_label("Execution role ARN").fill(role)
    page.get_by_label("Environment").fill("MODE=fast")
    page.get_by_role("button", name="Create model").click()

    error = page.get_by_test_id("error-name")
    expect(error).to_contain_text("at 'modelName' failed to satisfy constraint: Member must satisfy regular")
    expect(page.get_by_label("Model name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Model name")).to_have_attribute("aria-describedby", "field-name-error")
    expect(page.get_by_label("Model data URL")).to_have_value(model_data)
    expect(page.get_by_label("Environment")).to_have_value("MODE=fast")
    assert page.get_by_role("status").count() == 0
    page.screenshot(path=screenshot_dir / "model-form-error.png", full_page=True)
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    expect(error).to_be_visible()
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=screenshot_dir / "model-form-error-phone-dark.png", full_page=True)

    page.get_by_label("Model name").fill(name)
    page.get_by_role("button", name="Create model").click()

    expect(page).to_have_url(re.compile(rf"/console/models/{name}/$"))  # its name, as AWS's console
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text(f"Created model {name}.")
    described = sagemaker.describe_model(ModelName=name)
    assert described["PrimaryContainer"]["ModelDataUrl"] == model_data
    assert described["PrimaryContainer"]["Environment"] == {"MODE": "fast"}
    assert described["ExecutionRoleArn"] == role


def test_the_endpoint_config_form_then_the_endpoint_form_serve_a_model(
    stack, sagemaker, hosting, probe_image, page, screenshot_dir
):
    model = hosting.model(probe_image, {"PROBE_TAG": "form"})
    open_form(page, stack.endpoint_url, "endpoint-configs", "Create endpoint config")

    config = unique_name("console-config")
    page.get_by_label("Endpoint config name").fill(config)
    page.get_by_label("Model").select_option(model)
    page.get_by_label("Instance count").fill("0")  # the API wants at least one instance
    page.get_by_role("button", name="Create endpoint config").click()

    error = page.get_by_test_id("error-instance_count")
    member = "productionVariants.1.member.initialInstanceCount"
    expect(error).to_contain_text(f"Value '0' at '{member}' failed to satisfy constraint")
    expect(page.get_by_label("Instance count")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Endpoint config name")).to_have_value(config)
    expect(page.get_by_label("Model")).to_have_value(model)
    expect(page.get_by_label("Instance type")).to_have_value("ml.m5.large")
    assert page.get_by_role("status").count() == 0
    assert_not_found(sagemaker.describe_endpoint_config, EndpointConfigName=config)
    assert_fits_a_phone(page)

    page.get_by_label("Instance count").fill("1")
    page.get_by_role("button", name="Create endpoint config").click()

    expect(page).to_have_url(re.compile(rf"/console/endpoint-configs/{config}/$"))
    expect(page.get_by_role("heading", name=config, exact=True)).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text(f"Created endpoint config {config}.")
    [variant] = sagemaker.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"]
    assert (variant["VariantName"], variant["ModelName"]) == ("AllTraffic", model)
    assert (variant["InstanceType"], variant["InitialInstanceCount"]) == ("ml.m5.large", 1)

    page.get_by_role("link", name="Create endpoint").click()  # the config's page hands its name on
    expect(page.get_by_role("heading", name="Create endpoint")).to_be_visible()
    expect(page.get_by_label("Endpoint config")).to_have_value(config)
    endpoint = unique_name("console-endpoint")
    page.get_by_label("Endpoint name").fill(endpoint)
    page.get_by_role("button", name="Create endpoint").click()
    hosting.endpoints.append(endpoint)  # deleted at teardown

    expect(page).to_have_url(re.compile(rf"/console/endpoints/{endpoint}/$"))
    expect(page.get_by_role("heading", name=endpoint, exact=True)).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text(f"Created endpoint {endpoint}.")
    expect(page.get_by_test_id("status").first).to_have_text("InService", timeout=90_000)  # live, no reload
    assert sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointStatus"] == "InService"
    page.screenshot(path=screenshot_dir / "endpoint-created-from-forms.png", full_page=True)


def test_the_training_job_form_shows_a_bad_role_beside_it_then_runs_the_job(
    stack, sagemaker, bucket, shell_algo_image, page, screenshot_dir
):
    open_form(page, stack.endpoint_url, "training-jobs", "Create training job")

    name = unique_name("console-job")
    role = f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"
    output = f"s3://{bucket}/console-output"
    page.get_by_label("Training job name").fill(name)
    page.get_by_label("Training image").fill(shell_algo_image)
    page.get_by_label("Role ARN").fill("SageMakerRole")  # a name, not the ARN the API wants
    page.get_by_label("Output S3 path").fill(output)
    page.get_by_label("Max runtime (seconds)").fill("600")
    page.get_by_label("Hyperparameters").fill("epochs=3\nlr=0.1")
    page.get_by_role("button", name="Create training job").click()

    error = page.get_by_test_id("error-role")
    expect(error).to_contain_text("Value 'SageMakerRole' at 'roleArn' failed to satisfy constraint")
    expect(page.get_by_label("Role ARN")).to_have_attribute("aria-describedby", "field-role-error")
    expect(page.get_by_label("Training image")).to_have_value(shell_algo_image)
    expect(page.get_by_label("Output S3 path")).to_have_value(output)
    expect(page.get_by_label("Max runtime (seconds)")).to_have_value("600")
    expect(page.get_by_label("Hyperparameters")).to_have_value("epochs=3\nlr=0.1")
    assert page.get_by_role("status").count() == 0
    assert_not_found(sagemaker.describe_training_job, TrainingJobName=name)
    assert_fits_a_phone(page)

    page.get_by_label("Role ARN").fill(role)
    page.get_by_role("button", name="Create training job").click()

    expect(page).to_have_url(re.compile(rf"/console/training-jobs/{name}/$"))
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text(f"Created training job {name}.")
    expect(page.get_by_test_id("status")).to_have_text("Completed", timeout=120_000)  # live, no reload
    job = sagemaker.describe_training_job(TrainingJobName=name)
    assert job["TrainingJobStatus"] == "Completed"
    assert job["HyperParameters"] == {"epochs": "3", "lr": "0.1"}
    assert job["ModelArtifacts"]["S3ModelArtifacts"] == f"{output}/{name}/output/model.tar.gz"
    assert job["StoppingCondition"]["MaxRuntimeInSeconds"] == 600
    page.screenshot(path=screenshot_dir / "training-job-created-from-form.png", full_page=True)
