"""Operating the live stack: /healthz and /readyz, /metrics moving as a job runs and an endpoint
is invoked (every process's counts in one scrape), and worker log lines as JSON naming the job."""
import json
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import shell_job, unique_name, wait_for_status
from tests.e2e.hosting import invoke_json, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, serve_image, probe_image


def get(stack, path: str) -> tuple[int, dict | str]:
    try:
        with urllib.request.urlopen(stack.endpoint_url + path, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scrape(stack) -> dict[tuple[str, tuple], float]:
    status, text = get(stack, "/metrics")
    assert status == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples, name: str, **labels) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(value for (sample, found), value in samples.items() if sample == name and wanted <= set(found))


def test_healthz_and_readyz_answer_json_without_credentials(stack):
    assert get(stack, "/healthz") == (200, '{"status": "ok"}')
    status, body = get(stack, "/readyz")
    ready = {"status": "ready", "checked": ["broker", "database", "docker", "s3"]}
    assert (status, json.loads(body)) == (200, ready)


def test_metrics_move_as_a_job_runs_and_worker_logs_name_it(stack, sagemaker, bucket, shell_algo_image):
    before = scrape(stack)
    name = unique_name("observed")

    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo hello"))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"

    after = scrape(stack)
    completed = {"status": "Completed", "secondary_status": "Completed"}
    assert total(after, "sageport_training_jobs", **completed) == total(
        before, "sageport_training_jobs", **completed
    ) + 1
    created = {"operation": "CreateTrainingJob", "status": "200"}
    assert total(after, "sageport_api_request_seconds_count", **created) > total(
        before, "sageport_api_request_seconds_count", **created
    )
    # Counted in the Celery worker's processes, read through the API's /metrics.
    steps = {"kind": "TrainingJob", "outcome": "ok"}
    assert total(after, "sageport_reconcile_step_seconds_count", **steps) > total(
        before, "sageport_reconcile_step_seconds_count", **steps
    )
    assert ("sageport_queue_depth", (("queue", "celery"),)) in after

    lines = (stack.data_dir / "logs" / "worker.log").read_text(errors="replace").splitlines()
    about_job = [
        line for line in map(_json_or_none, lines)
        if line and (line.get("resource") or {}).get("name") == name
    ]
    assert any("-> Completed/Completed" in line["message"] for line in about_job)
    assert {line["resource"]["account"] for line in about_job} == {stack.account_id}


def _json_or_none(line: str) -> dict | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None  # a third party's line (Celery's banner, the API server's)
    return value if isinstance(value, dict) else None


def test_invocations_are_counted_by_endpoint_and_variant(stack, hosting, runtime, probe_image):
    name = hosting.probe_endpoint(probe_image)
    invoked = {"endpoint": name, "variant": "AllTraffic", "status": "200"}
    before = total(scrape(stack), "sageport_invocation_seconds_count", **invoked)

    for _ in range(3):
        invoke_json(runtime, name)

    # Each API process counts its own; the scrape adds them up (bounded wait: files are flushed
    # as the process writes them, so this is immediate, but scrape and request may race).
    wait_until(
        lambda: total(scrape(stack), "sageport_invocation_seconds_count", **invoked) == before + 3,
        timeout=10,
        what="three invocations counted",
    )
