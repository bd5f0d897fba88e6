"""The tiered-checkpointing image on its own (no stack): its entry point runs the example under
torchrun with two gloo ranks and AWS's library, as `docker run IMAGE train` does. Without a tier
service the job still trains and reports every checkpoint as failed; bad hyperparameters fail
the job with SageMaker's failure file. Runs with a tier service are the stack's tests."""
import json
from pathlib import Path

import pytest
from django.conf import settings

from runtime import labels

RUN_TIMEOUT_SECONDS = 240
OPT_ML_PARTS = ("input", "model", "output")


def run_example(docker_engine, image: str, root: Path, hyperparameters: dict) -> int:
    """`docker run IMAGE train` with /opt/ml under `root`, no network at all; its exit status."""
    for part in OPT_ML_PARTS:
        (root / part).mkdir()
    (root / "input/config").mkdir()
    (root / "input/config/hyperparameters.json").write_text(json.dumps(hyperparameters))
    container = docker_engine.containers.run(
        image, ["train"], detach=True, network_mode="none",
        labels={labels.STACK: settings.SAGEPORT_STACK_ID},
        environment={"TRAINING_JOB_NAME": "tier-image-test"},
        volumes={str(root / part): {"bind": f"/opt/ml/{part}", "mode": "rw"} for part in OPT_ML_PARTS},
    )
    try:
        return container.wait(timeout=RUN_TIMEOUT_SECONDS)["StatusCode"]
    finally:
        container.remove(force=True)


def test_without_a_tier_service_the_example_trains_and_reports_each_failed_checkpoint(
    docker_engine, pytorch_tier_image, tmp_path
):
    status = run_example(docker_engine, pytorch_tier_image, tmp_path, {"namespace": "lonely", "steps": "2"})

    assert status == 0
    summary = json.loads((tmp_path / "model/checkpointing.json").read_text())
    assert summary["world_size"] == 2
    assert summary["resumed_from_step"] is None
    assert summary["last_step"] == 2
    assert summary["saved_steps"] == []
    assert summary["failed_steps"] == [1, 2]
    assert len(summary["weights_sha256"]) == 64


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        ({"steps": "zero"}, "steps must be a positive integer"),
        ({"s3_base_path": "/tmp/x"}, "s3_base_path must start with s3://"),
    ],
)
def test_bad_hyperparameters_fail_the_job_with_a_reason(
    docker_engine, pytorch_tier_image, tmp_path, hyperparameters, message
):
    status = run_example(docker_engine, pytorch_tier_image, tmp_path, hyperparameters)

    assert status != 0
    assert message in (tmp_path / "output/failure").read_text()
