"""The README's boto3 example (examples/quickstart.py, shown verbatim there) run as a user runs
it: from the repository root, with nothing but the variables of the stack's env file."""
import json
import os
import subprocess
import sys

import pytest

from devstack.stack import PROJECT_DIR
from tests.conftest import read_env_file
from tests.e2e.conftest import read_tar_gz

QUICKSTART_IMAGE = "sageport-examples/python:latest"  # the image the script names


def test_the_quickstart_trains_the_example_model_with_only_the_env_file(stack, python_image, tmp_path):
    assert python_image == QUICKSTART_IMAGE
    # HOME: no ~/.aws of this machine's user is read; PATH: to find nothing but what a shell would.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sys.executable, "examples/quickstart.py"], cwd=PROJECT_DIR, env=env,
        capture_output=True, text=True, timeout=600,
    )

    assert result.returncode == 0, result.stderr
    name, status, artifacts = result.stdout.split()
    assert status == "Completed"
    assert artifacts == f"s3://my-data/output/{name}/output/model.tar.gz"
    bucket, key = artifacts.removeprefix("s3://").split("/", 1)
    model = json.loads(read_tar_gz(stack.client("s3"), bucket, key)["model.json"])
    assert model["coefficients"] == pytest.approx([2.0, -3.0])
    assert model["intercept"] == pytest.approx(0.5)

