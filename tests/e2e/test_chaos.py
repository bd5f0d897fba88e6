"""Chaos: the Celery worker and the API are killed with SIGKILL (whole process groups) at random
moments drawn from a fixed seed, while training jobs run and an endpoint serves a steady load.

The supervisor restarts each; no job is lost, every artifact is there exactly once, and requests
fail only while the API restarts. The figures (kill times, restart times, failed requests) are
printed (`pytest -s`) and written to `chaos-report.json` in the test's tmp dir."""

import json
import random
import time

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status
from tests.e2e.hosting import Load

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, serve_image, probe_image

SEED = 20261123
JOBS = 3
KILLS = ("api", "worker", "api", "worker")  # the order is shuffled by the seed
# Between one restart's end and the next kill. Each restart takes 5-8 s on a busy 2-core
# machine, so the jobs (10-20 s each) still run across several kills.
KILL_GAP_SECONDS = (1.0, 3.0)
LOAD_THREADS = 2
LOAD_INTERVAL_SECONDS = 0.2  # 2 threads x 5 requests a second: 10 requests/s
# A request in flight when the API dies fails at once; one sent while it restarts waits in the
# socket's backlog. Failures are expected from the kill until the API is ready again, plus the
# time for a client to notice its broken connection.
FAILURE_GRACE_SECONDS = 2.0


def test_killing_the_worker_and_the_api_loses_no_job_artifact_or_request_outside_restarts(
    stack, sagemaker, s3, bucket, shell_algo_image, hosting, probe_image, tmp_path
):
    rng = random.Random(SEED)
    endpoint = hosting.probe_endpoint(probe_image)
    jobs = [unique_name("chaos") for _ in range(JOBS)]
    for name in jobs:
        script = f"echo started; sleep {rng.randint(10, 20)}; echo {name} > /opt/ml/model/weights"
        sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))
    targets = list(KILLS)
    rng.shuffle(targets)

    kills = []
    with Load(stack, endpoint, threads=LOAD_THREADS, interval=LOAD_INTERVAL_SECONDS) as load:
        began = time.monotonic()
        for target in targets:
            time.sleep(rng.uniform(*KILL_GAP_SECONDS))
            killed_at, ready_at = stack.crash(target)
            kills.append({"target": target, "killed_at": killed_at - began, "ready_at": ready_at - began})
        time.sleep(3.0)  # the load goes on after the last restart
    finished = {name: wait_for_status(sagemaker, name, timeout=180) for name in jobs}
    failures = [
        {"at": at - began, "error": error} for at, error in zip(load.failed_at, load.failures, strict=True)
    ]
    _report(tmp_path, {"seed": SEED, "requests": load.count, "failed": len(failures), "kills": kills,
                       "failures": failures})

    statuses = {name: job["TrainingJobStatus"] for name, job in finished.items()}
    assert statuses == dict.fromkeys(jobs, "Completed")
    assert _model_keys(s3, bucket) == {_model_key(name) for name in jobs}
    for name in jobs:
        assert read_tar_gz(s3, bucket, _model_key(name)) == {"weights": f"{name}\n".encode()}
    assert [failure for failure in failures if not _while_api_restarts(failure["at"], kills)] == []
    assert load.tags["blue"] > 0


def _model_key(job_name: str) -> str:
    return f"output/{job_name}/output/model.tar.gz"


def _model_keys(s3, bucket: str) -> set[str]:
    """Every model artifact in the bucket (a duplicate would show as another key)."""
    listing = s3.list_objects_v2(Bucket=bucket, Prefix="output/").get("Contents", ())
    return {item["Key"] for item in listing if "/output/model" in item["Key"]}


def _while_api_restarts(moment: float, kills: list[dict]) -> bool:
    return any(
        kill["killed_at"] <= moment <= kill["ready_at"] + FAILURE_GRACE_SECONDS
        for kill in kills
        if kill["target"] == "api"
    )


def _report(tmp_path, report: dict) -> None:
    path = tmp_path / "chaos-report.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"\nchaos report ({path}):\n{json.dumps(report, indent=2)}")
