"""compose.yaml runs on the host's network, so a port written as a number would clash with
whatever else listens there (another stack, `make run`, a test's): every port is a variable.
Its S3 is `make run`'s: the gateway on the public S3 port, SeaweedFS behind it on a port of its
own with the platform key as its only identity."""
import re

import yaml

from devstack.stack import PROJECT_DIR, STORE_VOLUME_SLOTS

COMPOSE = PROJECT_DIR / "compose.yaml"
SAGEPORT_PROCESSES = ("api", "runtime", "worker", "beat", "s3gateway")
_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Z0-9_]+)(?::-([^}]*)|:\?([^}]*))?\}")
REQUIRED_STAND_IN = "a-value-the-user-sets"


def _without_variables(text: str) -> str:
    return _VARIABLE.sub("", text)


def _services() -> dict:
    """The services as `docker compose up` with no variable set sees them (every default)."""
    return yaml.safe_load(_VARIABLE.sub(_default, COMPOSE.read_text()))["services"]


def _default(match: re.Match) -> str:
    """A variable's default; a required one (`${NAME:?message}`) stands for what the user sets."""
    return REQUIRED_STAND_IN if match.group(3) is not None else match.group(2) or ""


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(arg.lstrip("-").split("=", 1) for arg in argv if arg.startswith("-") and "=" in arg)


def test_no_port_is_written_as_a_number():
    lines = [line for line in COMPOSE.read_text().splitlines() if not line.lstrip().startswith("#")]
    numbers = re.findall(r"(?<![\w.])\d{4,5}(?![\w.])", _without_variables("\n".join(lines)))

    assert numbers == []


def test_every_service_runs_under_an_init_on_the_host_network():
    services = yaml.safe_load(COMPOSE.read_text())["services"]

    assert set(services) == {
        "api", "runtime", "worker", "beat", "s3gateway", "seaweedfs", "redis", "postgres"
    }
    assert {name for name, service in services.items() if service.get("init") is not True} == set()
    assert {name for name, service in services.items() if service.get("network_mode") != "host"} == set()


def test_the_s3_port_is_the_gateway_and_every_sageport_process_uses_it():
    services = _services()
    gateway = services["s3gateway"]["command"]
    listen, upstream = gateway[gateway.index("--listen") + 1], gateway[gateway.index("--upstream") + 1]
    store = _flags(services["seaweedfs"]["command"])

    assert gateway[:3] == ["python", "-m", "s3gateway"]
    assert listen.startswith("127.0.0.1:")
    endpoints = {
        name: services[name]["environment"]["SAGEPORT_S3_ENDPOINT_URL"] for name in SAGEPORT_PROCESSES
    }
    assert endpoints == {name: f"http://{listen}" for name in SAGEPORT_PROCESSES}
    # SeaweedFS serves S3 only to the gateway, on a port of its own.
    assert upstream == f"http://127.0.0.1:{store['s3.port']}"
    assert store["s3.port"] != listen.rpartition(":")[2]
    assert store["ip.bind"] == "127.0.0.1"


def test_seaweedfs_authenticates_with_the_platform_key_as_its_only_identity():
    services = _services()
    store_env = services["seaweedfs"]["environment"]

    for name in SAGEPORT_PROCESSES:
        sageport_env = services[name]["environment"]
        assert store_env["AWS_ACCESS_KEY_ID"] == sageport_env["SAGEPORT_S3_ACCESS_KEY_ID"] != "", name
        assert store_env["AWS_SECRET_ACCESS_KEY"] == sageport_env["SAGEPORT_S3_SECRET_ACCESS_KEY"] != "", name
    assert _flags(services["seaweedfs"]["command"])["volume.max"] == str(STORE_VOLUME_SLOTS)


def test_the_platform_secret_reaches_every_bucket_so_compose_has_no_default_for_it():
    required = {match.group(1) for match in _VARIABLE.finditer(COMPOSE.read_text()) if match.group(3)}
    assert required == {"SAGEPORT_S3_SECRET_ACCESS_KEY"}
    assert _services()["seaweedfs"]["environment"]["AWS_SECRET_ACCESS_KEY"] == REQUIRED_STAND_IN


def test_the_gateway_is_health_checked_and_comes_up_before_the_processes_that_use_it():
    services = _services()

    assert services["s3gateway"]["healthcheck"]["test"]
    assert services["s3gateway"]["depends_on"]["seaweedfs"] == {"condition": "service_healthy"}
    assert services["s3gateway"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    for name in ("api", "worker", "beat"):
        assert services[name]["depends_on"]["s3gateway"] == {"condition": "service_healthy"}, name
    assert "seaweedfs" not in services["api"]["depends_on"]  # the api reaches S3 through the gateway only
