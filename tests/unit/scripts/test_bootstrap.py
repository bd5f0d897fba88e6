"""scripts/bootstrap.sh decides what to install from what the machine has: the engine, not the
client, is what Sageport needs (some machines ship a `docker` client binary without `dockerd`)."""
import shutil
import subprocess
from pathlib import Path

from devstack.stack import PROJECT_DIR

BOOTSTRAP = PROJECT_DIR / "scripts" / "bootstrap.sh"
# What the script itself runs besides the commands it probes for.
TOOLS_THE_SCRIPT_USES = ("dirname", "id", "ldd", "xargs", "python3")


def _path_holding(tmp_path: Path, fake_commands: tuple[str, ...]) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS_THE_SCRIPT_USES:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for name in fake_commands:
        fake = bin_dir / name
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
    return str(bin_dir)


def _missing_packages(path: str) -> set[str]:
    result = subprocess.run(
        ["/bin/bash", str(BOOTSTRAP), "--missing-packages"],
        env={"PATH": path}, capture_output=True, text=True, timeout=30, check=True,
    )
    return set(result.stdout.split())


def test_a_docker_client_without_an_engine_still_installs_the_engine(tmp_path):
    missing = _missing_packages(_path_holding(tmp_path, ("docker",)))

    assert "docker.io" in missing


def test_an_installed_engine_is_reused(tmp_path):
    missing = _missing_packages(_path_holding(tmp_path, ("docker", "dockerd")))

    assert "docker.io" not in missing


def test_every_missing_tool_is_named(tmp_path):
    missing = _missing_packages(_path_holding(tmp_path, ()))

    assert {"docker.io", "redis-server", "mmdebstrap", "docker-compose", "iproute2"} <= missing
