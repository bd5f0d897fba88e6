"""Fixtures of the hosting tests: the serving images, a runtime client and endpoint helpers.

Test modules load them with `pytest_plugins = ["tests.e2e.hosting_fixtures"]`."""

import subprocess
from pathlib import Path

import pytest

from tests.conftest import _build_example_image
from tests.e2e.hosting import NO_RETRIES, Hosting

PROBE_TAG = "sageport-test/probe-serve:latest"
PROBE_DIR = Path(__file__).parent / "probe"
PROBE_DOCKERFILE = """
FROM {base}
COPY probe.py /opt/program/probe.py
ENTRYPOINT ["python3", "/opt/program/probe.py"]
"""


@pytest.fixture(scope="session")
def serve_image() -> str:
    return _build_example_image("python-serve")


@pytest.fixture(scope="session")
def stream_image() -> str:
    """examples/token-stream: a token-by-token generator answering chunked."""
    return _build_example_image("python-stream")


@pytest.fixture(scope="session")
def probe_image(serve_image, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("probe")
    (context / "Dockerfile").write_text(PROBE_DOCKERFILE.format(base=serve_image))
    (context / "probe.py").write_bytes((PROBE_DIR / "probe.py").read_bytes())
    subprocess.run(["docker", "build", "-q", "-t", PROBE_TAG, str(context)], check=True, capture_output=True)
    return PROBE_TAG


@pytest.fixture(scope="session")
def runtime(stack):
    return stack.client("sagemaker-runtime", config=NO_RETRIES)


@pytest.fixture
def hosting(sagemaker):
    helper = Hosting(sagemaker)
    yield helper
    helper.delete_all()
