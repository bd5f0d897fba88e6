"""The README's boto3 example (examples/quickstart.py, shown verbatim there) run as a user runs
it: from the repository root, with nothing but the variables of the stack's env file, under the
egress guard."""
import json
import sys

import pytest

from tests.e2e.conftest import read_tar_gz
from tests.e2e.egress import GuardedRunner

QUICKSTART_IMAGE = "sageport-examples/python:latest"  # the image the script names


def test_the_quickstart_trains_the_example_model_with_only_the_env_file(stack, python_image, tmp_path):
    assert python_image == QUICKSTART_IMAGE

    run_guarded = GuardedRunner(stack.data_dir / "env", tmp_path)

    run = run_guarded(sys.executable, "examples/quickstart.py", timeout=600)

    assert run.completed.returncode == 0, run.report()
    assert run.attempts == [], run.report()  # nothing tried to leave the machine (tests/e2e/egress.py)
    name, status, artifacts = run.completed.stdout.split()
    assert status == "Completed"
    assert artifacts == f"s3://my-data/output/{name}/output/model.tar.gz"
    bucket, key = artifacts.removeprefix("s3://").split("/", 1)
    model = json.loads(read_tar_gz(stack.client("s3"), bucket, key)["model.json"])
    assert model["coefficients"] == pytest.approx([2.0, -3.0])
    assert model["intercept"] == pytest.approx(0.5)

