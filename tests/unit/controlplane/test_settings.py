"""Every environment variable the settings read is documented once in docs/configuration.md's table, and a
bad combination stops the process at start-up."""
import os
import re
import subprocess
import sys

from devstack.stack import PROJECT_DIR

SETTINGS_SOURCE = PROJECT_DIR / "controlplane" / "settings.py"
CONFIGURATION_DOC = PROJECT_DIR / "docs" / "configuration.md"
# os.environ.get("NAME", ...) and the _env_*("NAME", ...) helpers.
_READ = re.compile(r'(?:environ\.get|_env_\w+)\(\s*"([A-Z][A-Z0-9_]*)"')
_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \| ([^|]+) \|$")


def variables_read() -> set[str]:
    return set(_READ.findall(SETTINGS_SOURCE.read_text()))


def configuration_rows() -> list[tuple[str, str, str]]:
    rows = (_ROW.match(line) for line in CONFIGURATION_DOC.read_text().splitlines())
    return [(m[1], m[2].strip(), m[3].strip()) for m in rows if m]


def test_every_setting_has_one_row_with_a_default_and_a_meaning():
    rows = configuration_rows()
    names = [name for name, _, _ in rows]

    assert sorted(variables_read() - set(names)) == []  # missing from the table
    assert sorted(set(names) - variables_read()) == []  # documented but never read
    assert sorted({name for name in names if names.count(name) > 1}) == []
    assert [name for name, default, meaning in rows if not default or not meaning] == []


def test_the_settings_reader_finds_the_variables():
    assert {"SAGEPORT_PORT", "SAGEPORT_STACK_ID", "DATABASE_URL"} <= variables_read()


def test_an_image_pull_longer_than_the_visibility_timeout_is_refused_at_start_up(tmp_path):
    env = {
        **os.environ,
        "SAGEPORT_DATA_DIR": str(tmp_path),
        "SAGEPORT_VISIBILITY_TIMEOUT": "600",
        "SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS": "900",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import controlplane.settings"],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60,
    )

    assert result.returncode != 0
    assert "SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS (900) must be less than SAGEPORT_VISIBILITY_TIMEOUT" in (
        result.stderr
    )


def settings_error(tmp_path, **variables) -> str:
    env = {**os.environ, "SAGEPORT_DATA_DIR": str(tmp_path), **variables}
    result = subprocess.run(
        [sys.executable, "-c", "import controlplane.settings"],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    return result.stderr


def test_an_unknown_readiness_check_is_named_at_start_up(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_READINESS_CHECKS="database,dokcer")
    assert "SAGEPORT_READINESS_CHECKS must be a comma-separated list of database, broker, s3, docker" in error


def test_a_listening_address_must_be_an_ip_address(tmp_path):
    assert "SAGEPORT_NODE_ADDRESS must be an IP address, got 'node-b.lan'" in settings_error(
        tmp_path, SAGEPORT_NODE_ADDRESS="node-b.lan"
    )
    assert "SAGEPORT_API_ADDRESS must be an IP address, got '10.0.0'" in settings_error(
        tmp_path, SAGEPORT_API_ADDRESS="10.0.0"
    )


def test_a_node_name_that_cannot_name_a_queue_or_container_is_refused(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_NODE_NAME="gpu box/1")
    assert "SAGEPORT_NODE_NAME must be 1 to 63 letters" in error


def test_a_node_instance_type_the_catalog_does_not_know_is_refused(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_NODE_INSTANCE_TYPE="ml.bogus.large")
    assert "SAGEPORT_NODE_INSTANCE_TYPE must be an instance type such as ml.g5.12xlarge" in error


def test_an_engine_namespace_must_be_an_absolute_path(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_ENGINE_NETNS="netns/engine")
    assert "SAGEPORT_ENGINE_NETNS must be the absolute path of a network namespace" in error


def test_a_subnet_pool_too_small_to_halve_into_two_24s_is_refused(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_TRAINING_SUBNET_POOL="10.213.0.0/24")
    assert "SAGEPORT_TRAINING_SUBNET_POOL must hold at least a /23 (two /24s" in error



def test_the_forwarders_three_ports_must_differ(tmp_path):
    error = settings_error(tmp_path, SAGEPORT_SERVICES_API_PORT="9000", SAGEPORT_SERVICES_RUNTIME_PORT="9000")
    assert "SAGEPORT_SERVICES_S3_PORT must differ, got 9000, 9000," in error
