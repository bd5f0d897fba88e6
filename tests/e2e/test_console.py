"""The console in a real browser against the live stack: sign in, watch a job run to completion
without reloading (status, live log lines, its metric chart), page back, search, jump to the error
in and download a long log, stop a running job (and see that it exited on SIGTERM), change an
endpoint's weights (and see the step in its deployment history and its latency p50/p99 charted),
and one account never seeing another's jobs; the pages fit a phone screen."""

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from devstack.stack import PROJECT_DIR
from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status
from tests.e2e.console_sign_in import sign_in
from tests.e2e.hosting import invoke_json, wait_for_endpoint, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.browser"]

EPOCHS = 5
# Prints one loss line a second, so the page sees lines arrive while the job trains.
TRAINING_SCRIPT = (
    f'for i in $(seq 1 {EPOCHS}); do echo "epoch $i loss=0.$((10 - i))"; sleep 1; done; '
    "echo trained > /opt/ml/model/model.txt"
)
# Keeps training until SIGTERM, then saves its model and leaves cleanly.
STOPPABLE_SCRIPT = (
    "trap 'echo saving on SIGTERM; echo stopped > /opt/ml/model/model.txt; exit 0' TERM; "
    "echo ready to be stopped; while true; do sleep 0.2; done"
)
LOSS = [{"Name": "train:loss", "Regex": r"loss=([0-9.]+)"}]
INVOCATIONS = 6
LISTS = ("training-jobs", "processing-jobs", "endpoints", "models", "hyperpod")


def job_row(page: Page, name: str):
    return page.locator(f'tr[data-job="{name}"]')


def mark_page(page: Page) -> None:
    """A mark a reload would wipe out."""
    page.evaluate("window.__notReloaded = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__notReloaded === true")


@pytest.fixture
def console(stack, browser_context):
    page = browser_context.new_page()
    sign_in(page, stack.endpoint_url, stack.access_key_id, stack.secret_access_key)
    return page


def test_a_job_appears_runs_and_completes_with_live_logs_and_its_metric_chart(
    stack, sagemaker, s3, bucket, shell_algo_image, console, browser_context, screenshot_dir
):
    name = unique_name("console-run")
    listing = console
    mark_page(listing)
    stack.kill_worker()  # the job waits in Starting until the page has seen it there
    try:
        request = shell_job(name, shell_algo_image, bucket, TRAINING_SCRIPT)
        request["AlgorithmSpecification"]["MetricDefinitions"] = LOSS
        sagemaker.create_training_job(**request)
        row = job_row(listing, name)
        expect(row.get_by_test_id("status")).to_have_text("InProgress")
        expect(row.get_by_test_id("secondary")).to_have_text("Starting")
        listing.screenshot(path=screenshot_dir / "training-jobs-starting.png")

        detail = browser_context.new_page()
        detail.goto(listing.url)
        job_row(detail, name).get_by_role("link", name=name).click()
        expect(detail.get_by_role("heading", name=name, exact=True)).to_be_visible()
        mark_page(detail)
        expect(detail.get_by_test_id("secondary")).to_have_text("Starting")
    finally:
        stack.start_worker()

    logs = detail.locator("[data-log-streams] pre")
    expect(logs).to_contain_text("epoch 1 loss=0.9", timeout=60_000)
    expect(detail.get_by_test_id("status")).to_have_text("Completed", timeout=90_000)
    expect(logs).to_contain_text(f"epoch {EPOCHS} loss=0.{10 - EPOCHS}")
    assert logs.first.locator(".line").count() == EPOCHS
    chart = detail.locator('[data-chart="train:loss"]')
    expect(chart).to_have_attribute("data-points", str(EPOCHS))
    assert chart.locator("circle.point").count() == EPOCHS
    expect(chart.locator(".chart-final")).to_have_text(
        re.compile(rf"^last 0\.{10 - EPOCHS} at \d\d:\d\d:\d\dZ \(min 0\.{10 - EPOCHS}, max 0\.9\)$")
    )
    expect(detail.locator(".timeline")).to_contain_text("Training")
    assert_not_reloaded(detail)
    detail.screenshot(path=screenshot_dir / "training-job.png", full_page=True)

    detail.reload()  # the artifacts are linked once they exist: downloaded through the console
    with detail.expect_download() as download:
        detail.locator(".locations").get_by_role("link", name=re.compile(r"model\.tar\.gz$")).click()
    stored = s3.get_object(Bucket=bucket, Key=f"output/{name}/output/model.tar.gz")["Body"].read()
    assert Path(download.value.path()).read_bytes() == stored
    copy = detail.locator("button.copy-arn")
    expect(copy).to_have_text("Copy ARN")
    copy.click()
    expect(copy).to_have_text(re.compile(r"^(Copied|Selected: press Ctrl\+C)$"))

    expect(row.get_by_test_id("status")).to_have_text("Completed")
    assert_not_reloaded(listing)
    listing.screenshot(path=screenshot_dir / "training-jobs.png")

    detail.get_by_role("link", name="Clone").click()  # a prefilled CreateTrainingJob form
    expect(detail.get_by_label("New job name")).to_have_value(f"{name}-clone")
    expect(detail.get_by_label(re.compile("CreateTrainingJob request"))).to_have_value(
        re.compile("train:loss")
    )
    detail.screenshot(path=screenshot_dir / "training-job-clone.png")
    detail.get_by_role("button", name="Create training job").click()
    expect(detail.get_by_role("heading", name=f"{name}-clone", exact=True)).to_be_visible()
    clone = wait_for_status(sagemaker, f"{name}-clone", timeout=90)
    assert clone["TrainingJobStatus"] == "Completed"
    assert clone["AlgorithmSpecification"]["MetricDefinitions"] == LOSS


def test_stop_from_the_console_ends_the_job_stopped_with_its_artifacts(
    stack, sagemaker, s3, bucket, shell_algo_image, console, screenshot_dir
):
    name = unique_name("console-stop")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, STOPPABLE_SCRIPT))
    wait_for_status(sagemaker, name, statuses={"Training"}, timeout=90)
    job_row(console, name).get_by_role("link", name=name).click()
    expect(console.locator("[data-log-streams] pre")).to_contain_text("ready to be stopped", timeout=60_000)

    console.once("dialog", lambda dialog: dialog.accept())
    console.get_by_role("button", name="Stop", exact=True).click()

    expect(console.get_by_role("status")).to_contain_text(f"Stopping {name}")
    expect(console.get_by_test_id("status")).to_have_text("Stopped", timeout=90_000)
    expect(console.locator("[data-log-streams] pre")).to_contain_text("saving on SIGTERM")
    expect(console.get_by_test_id("stop-progress")).to_contain_text("exited on SIGTERM")
    console.screenshot(path=screenshot_dir / "training-job-stopped.png", full_page=True)
    job = sagemaker.describe_training_job(TrainingJobName=name)
    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("Stopped", "Stopped")
    files = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert files["model.txt"] == b"stopped\n"


def test_a_long_log_pages_back_is_searched_whole_jumps_to_its_error_and_downloads(
    stack, sagemaker, bucket, shell_algo_image, console, screenshot_dir
):
    """700 lines: the page shows the last 500; the error is on line 3."""
    name = unique_name("console-log")
    script = (
        'for i in $(seq 0 699); do if [ "$i" = 3 ]; then echo "ValueError: bad row $i"; '
        'else echo "row $i"; fi; done'
    )
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))
    wait_for_status(sagemaker, name, timeout=90)
    job_row(console, name).get_by_role("link", name=name).click()
    log = console.locator("pre[data-stream]")
    expect(log).to_contain_text("row 699", timeout=60_000)
    expect(log.locator(".line")).to_have_count(500)

    console.get_by_role("searchbox", name=re.compile("Search the log of")).fill("valueerror")
    console.get_by_role("button", name="Find").click()
    expect(console.locator(".log-results")).to_contain_text("1 line holds “valueerror”")
    expect(console.locator(".log-results .line")).to_have_text([re.compile(r"ValueError: bad row 3\s*$")])

    console.get_by_role("button", name="Earlier lines").click()
    expect(log.locator(".line")).to_have_count(700)
    expect(log.locator(".line").first).to_contain_text("row 0")
    console.get_by_role("button", name="Earlier lines").click()
    expect(console.get_by_role("button", name="Start of the log")).to_be_disabled()
    console.get_by_role("button", name="Jump to the error").click()
    expect(log.locator(".line.hit")).to_contain_text("ValueError: bad row 3")
    console.get_by_label("Wrap lines").uncheck()
    expect(log).to_have_class(re.compile(r"\bnowrap\b"))
    console.screenshot(path=screenshot_dir / "training-job-long-log.png", full_page=True)

    with console.expect_download() as download:
        console.get_by_role("link", name="Download").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert len(lines) == 700 and lines[3].endswith(" ValueError: bad row 3")
    assert lines[-1].endswith(" row 699")

    console.emulate_media(color_scheme="dark")  # the console follows the system's dark setting
    assert console.evaluate("getComputedStyle(document.documentElement).backgroundColor") == "rgb(13, 17, 23)"
    console.screenshot(path=screenshot_dir / "training-job-dark.png", full_page=True)


def test_the_pages_fit_a_phone_screen(stack, sagemaker, bucket, shell_algo_image, chromium, screenshot_dir):
    """At 390 px nothing makes the page scroll sideways (wide tables scroll in their own box)."""
    name = unique_name("console-phone")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo a short job"))
    wait_for_status(sagemaker, name, timeout=90)
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        page = phone.new_page()
        sign_in(page, stack.endpoint_url, stack.access_key_id, stack.secret_access_key)
        job_row(page, name).get_by_role("link", name=name).click()
        expect(page.locator("pre[data-stream]")).to_contain_text("a short job", timeout=60_000)
        expect(page.get_by_test_id("status")).to_have_text("Completed")
        pages = {"training-job": page.url}
        pages.update({where: f"{stack.endpoint_url}/console/{where}/" for where in LISTS})
        for where, url in pages.items():
            page.goto(url)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, where
            page.screenshot(path=screenshot_dir / f"phone-{where}.png", full_page=True)
    finally:
        phone.close()


def test_changing_an_endpoints_weights_in_the_console_shows_in_describe_endpoint_and_its_history(
    stack, sagemaker, hosting, probe_image, runtime, console, screenshot_dir
):
    model = hosting.model(probe_image, {"PROBE_TAG": "blue"})
    name = hosting.endpoint(hosting.config(("blue", model, 1, 1.0), ("green", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)
    console.get_by_role("link", name="Endpoints", exact=True).click()
    console.get_by_role("link", name=name).click()
    expect(console.get_by_role("heading", name=name, exact=True)).to_be_visible()
    blue = console.get_by_role("group", name="blue")

    blue.get_by_label("Weight").fill("3")
    console.get_by_role("button", name="Apply").click()

    expect(console.get_by_role("status")).to_contain_text("Updating weights")
    weights = wait_until(lambda: _weights_once_in_service(sagemaker, name), timeout=60, what="new weights")
    assert weights == {"blue": 3.0, "green": 1.0}
    expect(console.locator('tr[data-variant="blue"]').get_by_test_id("weight")).to_have_text("3.0")
    expect(console.get_by_test_id("status").first).to_have_text("InService")
    # The deployment history, newest first, updated without a reload.
    history = console.get_by_test_id("history").locator("tbody tr")
    expect(history.first).to_have_attribute("data-kind", "CapacityApplied")
    weights_step = console.locator('tr[data-kind="WeightsAndCapacitiesUpdated"]')
    expect(weights_step).to_contain_text("blue weight 1.0 → 3.0")
    expect(history.last).to_have_attribute("data-kind", "FleetCreated")
    expect(console.locator('tr[data-kind="HealthGatePassed"]')).to_contain_text("the endpoint is InService")

    for _ in range(INVOCATIONS):
        invoke_json(runtime, name)
    latency = console.locator('[data-chart="ModelLatency (ms)"]')
    for line in ("p50", "p99"):  # drawn once the API process has written its minute (0.5 s here)
        drawn = latency.locator(f'path[data-line="{line}"]')
        expect(drawn).to_have_attribute("data-points", re.compile(r"^[1-9]"))
    expect(latency.locator(".legend")).to_have_text(re.compile("p50.*p99"))
    invocations = console.locator('[data-chart="Invocations"]')
    expect(invocations.locator("rect.bar").first).to_be_visible()  # counts: bars from zero
    console.screenshot(path=screenshot_dir / "endpoint.png", full_page=True)


def _weights_once_in_service(sagemaker, name: str) -> dict | None:
    endpoint = sagemaker.describe_endpoint(EndpointName=name)
    if endpoint["EndpointStatus"] != "InService":
        return None
    return {variant["VariantName"]: variant["CurrentWeight"] for variant in endpoint["ProductionVariants"]}


def test_another_account_sees_neither_the_list_entry_nor_the_page_of_a_job(
    stack, sagemaker, bucket, shell_algo_image, console, chromium, screenshot_dir
):
    name = unique_name("console-private")
    script = "echo 'CUDA out of memory' > /opt/ml/output/failure; exit 3"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))
    expect(job_row(console, name)).to_be_visible()
    job_row(console, name).get_by_role("link", name=name).click()
    expect(console.get_by_role("heading", name=name, exact=True)).to_be_visible()
    job_url = console.url
    assert job_url == f"{stack.endpoint_url}/console/training-jobs/{name}/"  # the name, not an id
    expect(console.get_by_test_id("failure-reason")).to_contain_text("CUDA out of memory", timeout=60_000)
    expect(console.get_by_test_id("status")).to_have_text("Failed")
    console.screenshot(path=screenshot_dir / "training-job-failed.png")

    other_context = chromium.new_context()
    try:
        other = other_context.new_page()
        key_id, secret = stack.create_access_key("210987654321")
        sign_in(other, stack.endpoint_url, key_id, secret)
        expect(other.get_by_test_id("who")).to_have_text("Account 210987654321")
        assert other.locator(f'tr[data-job="{name}"]').count() == 0
        response = other.goto(job_url)
        assert response.status == 404
        expect(other.get_by_role("heading", name="Not found")).to_be_visible()
        assert name not in other.content()
        owners = f"{stack.endpoint_url}/console/accounts/{stack.account_id}/{stack.region}"
        scoped = f"{owners}/training-jobs/{name}/"
        assert other.goto(scoped).status == 404  # naming the owner's account grants nothing
        other.screenshot(path=screenshot_dir / "not-found.png")
    finally:
        other_context.close()
    wait_for_status(sagemaker, name)


def test_an_operator_sees_every_account_and_the_nodes_with_their_gpus(
    stack, sagemaker, bucket, shell_algo_image, chromium, screenshot_dir
):
    name = unique_name("console-ops")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "true"))
    password = uuid.uuid4().hex
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "createsuperuser",
            "--noinput",
            "--username",
            f"ops-{password[:6]}",
            "--email",
            "ops@example.com",
        ],
        cwd=PROJECT_DIR,
        check=True,
        capture_output=True,
        env={**os.environ, "DJANGO_SUPERUSER_PASSWORD": password},
    )
    context = chromium.new_context(viewport={"width": 390, "height": 844})  # a phone
    try:
        page = context.new_page()
        page.goto(f"{stack.endpoint_url}/console/login")
        page.get_by_label("User name").fill(f"ops-{password[:6]}")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in as operator").click()
        expect(page.get_by_test_id("who")).to_contain_text("all accounts")
        expect(job_row(page, name)).to_be_visible()
        page.screenshot(path=screenshot_dir / "training-jobs-phone.png", full_page=True)

        page.get_by_role("link", name="Capacity").click()
        node = page.locator('[data-node="test-node-a"]')
        expect(node).to_contain_text("up")
        assert node.locator("tbody tr").count() == 4  # the test node's four declared GPUs
        page.screenshot(path=screenshot_dir / "capacity-phone.png", full_page=True)
    finally:
        context.close()
    wait_for_status(sagemaker, name)
