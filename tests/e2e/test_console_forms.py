"""The console's create form in a real browser against the live stack: a bad value comes back
as the API's error beside its field with everything typed kept; fixed, the form lands on the new
model's page, and the model is the one DescribeModel answers."""

import re

from playwright.sync_api import expect

from tests.e2e.conftest import unique_name
from tests.e2e.console_sign_in import sign_in

pytest_plugins = ["tests.e2e.browser"]
PHONE = {"width": 390, "height": 844}


def test_the_model_form_shows_a_bad_name_beside_it_then_creates_the_model(
    stack, sagemaker, bucket, browser_context, screenshot_dir
):
    page = browser_context.new_page()
    sign_in(page, stack.endpoint_url, stack.access_key_id, stack.secret_access_key)
    page.goto(f"{stack.endpoint_url}/console/models/")
    page.get_by_role("link", name="Create model").click()
    expect(page.get_by_role("heading", name="Create model")).to_be_visible()

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
