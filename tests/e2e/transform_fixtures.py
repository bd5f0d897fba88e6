"""Fixtures of the batch-transform tests: the model image (tests/e2e/transform_probe/transformer.py on
the serving example's scaffolding) and `model` (a SageMaker model of it, with an Environment).
Test modules load them with `pytest_plugins`, after tests.e2e.hosting_fixtures (serve_image)."""

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import unique_name

TRANSFORMER_TAG = "sageport-test/transformer:latest"
TRANSFORMER_DOCKERFILE = """
FROM {base}
COPY transformer.py /opt/program/transformer.py
ENTRYPOINT ["python3", "/opt/program/transformer.py"]
"""


@pytest.fixture(scope="session")
def transformer_image(serve_image, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("transformer")
    (context / "Dockerfile").write_text(TRANSFORMER_DOCKERFILE.format(base=serve_image))
    source = Path(__file__).parent / "transform_probe" / "transformer.py"
    (context / "transformer.py").write_bytes(source.read_bytes())
    subprocess.run(
        ["docker", "build", "-q", "-t", TRANSFORMER_TAG, str(context)], check=True, capture_output=True
    )
    return TRANSFORMER_TAG


@pytest.fixture
def model(sagemaker, transformer_image):
    def create(**environment) -> str:
        name = unique_name("transformer")
        sagemaker.create_model(
            ModelName=name, PrimaryContainer={"Image": transformer_image, "Environment": environment}
        )
        return name

    return create
