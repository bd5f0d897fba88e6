"""scripts/compose-images.sh --offline builds a stand-in for each base image under the very name
the Dockerfile and compose.yaml use: a name that differs would make compose try a registry."""
import re

import yaml

from devstack.stack import PROJECT_DIR

SCRIPT = PROJECT_DIR / "scripts" / "compose-images.sh"
OWN_IMAGE = "sageport/controlplane:latest"  # built from the Dockerfile, never pulled


def stand_in_names() -> set[str]:
    return set(re.findall(r"^(?:PYTHON|POSTGRES|REDIS)_IMAGE=(\S+)$", SCRIPT.read_text(), re.MULTILINE))


def base_images_used() -> set[str]:
    dockerfile = set(re.findall(r"^FROM (\S+)", (PROJECT_DIR / "Dockerfile").read_text(), re.MULTILINE))
    services = yaml.safe_load((PROJECT_DIR / "compose.yaml").read_text())["services"]
    compose = {service["image"] for service in services.values() if "image" in service}
    return (dockerfile | compose) - {OWN_IMAGE}


def test_every_base_image_has_a_stand_in_of_the_same_name():
    assert base_images_used() == stand_in_names()
    assert "postgres:15-bookworm" in stand_in_names()  # Debian bookworm's PostgreSQL is 15

