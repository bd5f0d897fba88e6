"""The map holds: the import layers of pyproject's import-linter contract are kept, every package
is on the map in docs/architecture.md, and every package says in its docstring what it holds."""
import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from devstack.stack import PROJECT_DIR

# libraries/ holds distributions installed into users' containers, outside the layered control plane.
NOT_SOURCE = {"tests", "examples", "images", "scripts", "bench", "docs", "libraries"}


def _packages() -> list[Path]:
    """Every source package directory (top-level and nested), migrations and commands aside."""
    found = []
    for init in sorted(PROJECT_DIR.glob("*/**/__init__.py")):
        relative = init.parent.relative_to(PROJECT_DIR)
        if relative.parts[0] in NOT_SOURCE or relative.parts[0].startswith("."):
            continue
        found.append(relative)
    return found


def _mapped_packages() -> set[str]:
    """The packages the map section of docs/architecture.md names (`name/` or `a/b/`)."""
    text = (PROJECT_DIR / "docs" / "architecture.md").read_text()
    section = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([a-z0-9_]+(?:/[a-z0-9_]+)*)/`", section))


def test_the_import_layers_are_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_contract_covers_every_top_level_package():
    config = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = {
        name.strip()
        for contract in config["contracts"]
        for layer in contract.get("layers", ())
        for name in layer.split("|")
    }
    top_level = {package.parts[0] for package in _packages()}
    assert top_level == set(config["root_packages"]) == layered


def test_every_package_is_on_the_map():
    wanted = {
        str(package)
        for package in _packages()
        if not {"migrations", "management", "commands"} & set(package.parts)
    }
    assert wanted - _mapped_packages() == set()


def test_the_map_names_no_package_that_does_not_exist():
    existing = {str(package) for package in _packages()}
    assert _mapped_packages() - existing == set()


def test_every_package_says_what_it_holds():
    undocumented = [
        str(package)
        for package in _packages()
        if not ast.get_docstring(ast.parse((PROJECT_DIR / package / "__init__.py").read_text()))
    ]
    assert undocumented == []
