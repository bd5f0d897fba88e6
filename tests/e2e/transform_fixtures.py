"""Fixtures of the batch-transform tests: the model image (tests/e2e/transform_probe/transformer.py on
the serving example's scaffolding) and `model` (a SageMaker model of it, with an Environment).
Test modules load them with `pytest_plugins`, after tests.e2e.hosting_fixtures (serve_image)."""

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import unique_name

TRANSFORMER_REPOSITORY = "sageport-test/transformer"
TRANSFORMER_DOCKERFILE = """
FROM {base}
COPY transformer.py /opt/program/transformer.py
ENTRYPOINT ["python3", "/opt/program/transformer.py"]
"""


@pytest.fixture(scope="session")
def transformer_image(serve_image, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("transformer")
    (context / "Dockerfile").write_text(TRANSFORMER_DOCKERFILE.format(base=serve_image))
    source = (Path(__file__).parent / "transform_probe" / "transformer.py").read_bytes()
    (context / "transformer.py").write_bytes(source)
    # Tagged by its source: sessions of other checkouts with another probe build their own.
    tag = f"{TRANSFORMER_REPOSITORY}:{hashlib.sha256(source).hexdigest()[:12]}"
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], check=True, capture_output=True)
    return tag


@pytest.fixture
def model(sagemaker, transformer_image):
    def create(**environment) -> str:
        name = unique_name("transformer")
        sagemaker.create_model(
            ModelName=name, PrimaryContainer={"Image": transformer_image, "Environment": environment}
        )
        return name

    return create
