"""The README's quick starts (examples/quickstart.py and examples/quickstart_endpoint.py, shown
verbatim there) run as a user runs them: from the repository root, with nothing but the variables
of the stack's env file, under the egress guard."""
import json
import sys

import pytest

from tests.e2e.conftest import read_tar_gz
from tests.e2e.egress import GuardedRunner

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # serve_image

QUICKSTART_IMAGE = "sageport-examples/python:latest"  # the images the scripts name
SERVE_IMAGE = "sageport-examples/python-serve:latest"


def test_the_quickstarts_train_and_serve_the_example_model_with_only_the_env_file(
    stack, python_image, serve_image, tmp_path
):
    assert (python_image, serve_image) == (QUICKSTART_IMAGE, SERVE_IMAGE)

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

    served = run_guarded(sys.executable, "examples/quickstart_endpoint.py", timeout=600)

    assert served.completed.returncode == 0, served.report()
    assert served.attempts == [], served.report()
    endpoint, prediction = served.completed.stdout.split()
    assert float(prediction) == pytest.approx(2.0 * 1.5 - 3.0 * -2.0 + 0.5)
    sm = stack.client("sagemaker")
    assert sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"] == "InService"
    assert sm.describe_model(ModelName=endpoint)["PrimaryContainer"]["ModelDataUrl"] == artifacts
    sm.delete_endpoint(EndpointName=endpoint)
