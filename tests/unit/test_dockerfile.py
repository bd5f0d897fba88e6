"""The control-plane image holds every Django app: a package left out of the Dockerfile makes
the compose image fail at start-up (INSTALLED_APPS cannot be imported)."""
import re
import tomllib

from devstack.stack import PROJECT_DIR

NOT_SHIPPED = {"tests"}  # the test suite is not part of the image


def _top_level_packages() -> set[str]:
    return {
        path.parent.name
        for path in PROJECT_DIR.glob("*/__init__.py")
        if path.parent.name not in NOT_SHIPPED
    }


def _copied_directories() -> set[str]:
    copied = set()
    for line in (PROJECT_DIR / "Dockerfile").read_text().splitlines():
        match = re.fullmatch(r"\s*COPY\s+(.+)", line)
        if match:
            *sources, _destination = match.group(1).split()
            copied.update(source.rstrip("/") for source in sources)
    return copied


def test_the_dockerfile_copies_every_top_level_package():
    packages = _top_level_packages()
    assert {"controlplane", "training", "hosting", "capacity", "logs", "protocol"} <= packages
    assert packages - _copied_directories() == set()


def test_pyproject_installs_every_top_level_package():
    pyproject = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    installed = {pattern.rstrip("*") for pattern in patterns}
    assert _top_level_packages() - installed == set()


def test_nothing_the_dockerfile_copies_is_left_out_of_the_build_context():
    ignored = {
        line.strip().rstrip("/")
        for line in (PROJECT_DIR / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "!"))
    }
    assert (_copied_directories() - {"."}) & ignored == set()
