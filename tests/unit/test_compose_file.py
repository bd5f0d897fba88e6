"""compose.yaml runs on the host's network, so a port written as a number would clash with
whatever else listens there (another stack, `make run`, a test's): every port is a variable."""
import re

import yaml

from devstack.stack import PROJECT_DIR

COMPOSE = PROJECT_DIR / "compose.yaml"


def _without_variables(text: str) -> str:
    return re.sub(r"\$\{[A-Z0-9_]+(:-[^}]*)?\}", "", text)


def test_no_port_is_written_as_a_number():
    lines = [line for line in COMPOSE.read_text().splitlines() if not line.lstrip().startswith("#")]
    numbers = re.findall(r"(?<![\w.])\d{4,5}(?![\w.])", _without_variables("\n".join(lines)))

    assert numbers == []


def test_every_service_runs_under_an_init_on_the_host_network():
    services = yaml.safe_load(COMPOSE.read_text())["services"]

    assert set(services) == {"api", "worker", "beat", "seaweedfs", "redis", "postgres"}
    assert {name for name, service in services.items() if service.get("init") is not True} == set()
    assert {name for name, service in services.items() if service.get("network_mode") != "host"} == set()
