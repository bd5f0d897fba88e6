"""The control-plane image holds every Django app: a package left out of .dockerignore's list (the
Dockerfile copies the context that list lets in) makes the compose image fail at start-up
(INSTALLED_APPS cannot be imported)."""
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


def _shipped() -> set[str]:
    """What the image's `COPY . ./` copies: the names .dockerignore lets back in after `*`."""
    lines = [line.strip() for line in (PROJECT_DIR / ".dockerignore").read_text().splitlines()]
    patterns = [line for line in lines if line and not line.startswith("#")]
    assert patterns[0] == "*", "the context holds only what .dockerignore lists"
    return {pattern.removeprefix("!").rstrip("/") for pattern in patterns if pattern.startswith("!")}


def test_the_dockerfile_copies_every_top_level_package():
    packages = _top_level_packages()
    assert {"controlplane", "training", "hosting", "capacity", "logs", "protocol"} <= packages
    assert re.search(r"^COPY \. \./$", (PROJECT_DIR / "Dockerfile").read_text(), re.MULTILINE)
    assert packages | {"manage.py", "libraries"} <= _shipped()
    assert not _shipped() & NOT_SHIPPED


def test_pyproject_installs_every_top_level_package():
    pyproject = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    installed = {pattern.rstrip("*") for pattern in patterns}
    assert _top_level_packages() - installed == set()
