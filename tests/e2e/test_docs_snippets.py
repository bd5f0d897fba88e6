"""Every block the docs mark runnable (`<!-- runnable -->`, tests/runnable_docs.py) runs as a
reader runs it, against the live stack: in a directory of its own laid out as the repository root
the docs assume (`.sageport` holding the stack's env file, `examples/`, `.venv`), under the egress
guard, bounded in time. A Python block runs with the venv's interpreter and the env file's
variables ("after `source .sageport/env`"); a shell block runs with bash and nothing of the env
file, which it sources itself, the venv's `bin` (the AWS CLI) first on PATH.

The blocks run in the order a reader meets them, the README first: a block may build on an earlier
one as the docs say (the quick start's endpoint serves the quick start's model). A block shown in
two places runs once, under both places' names."""

import sys
from pathlib import Path

import pytest

from devstack.stack import PROJECT_DIR
from tests.e2e.egress import GuardedRunner
from tests.runnable_docs import Block, runnable_blocks

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # serve_image, stream_image

BLOCK_TIMEOUT = 480  # seconds: a block trains a model or brings an endpoint up
VENV_BIN = Path(sys.executable).parent
# The interpreter and arguments by language; the block is the file `block` in the run's directory.
SHELL = ["bash", "-e", "block"]
COMMANDS = {"python": [sys.executable, "block"], "sh": SHELL, "bash": SHELL}


def _distinct(blocks: list[Block]) -> list[tuple[str, Block]]:
    """Each block once, named by every place that shows it."""
    places: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], Block] = {}
    for block in blocks:
        key = (block.language, block.code)
        places.setdefault(key, []).append(block.place)
        first.setdefault(key, block)
    return [("+".join(places[key]), block) for key, block in first.items()]


BLOCKS = _distinct(runnable_blocks())


@pytest.fixture(scope="module")
def images(python_image, serve_image, stream_image) -> None:
    """The images the marked blocks name: the quick starts', the SDK recipe's, the token stream's."""


@pytest.fixture
def user_dir(stack, tmp_path) -> Path:
    """A directory laid out as the repository root, for a reader who cloned it and started the stack."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".sageport").symlink_to(stack.data_dir)
    (root / "examples").symlink_to(PROJECT_DIR / "examples")
    (root / ".venv").symlink_to(VENV_BIN.parent)
    return root


@pytest.fixture
def endpoints_left(sagemaker):
    """Delete the endpoints a block created (their containers): the blocks leave them up for the reader."""
    before = _endpoint_names(sagemaker)
    yield
    for name in _endpoint_names(sagemaker) - before:
        sagemaker.delete_endpoint(EndpointName=name)


def _endpoint_names(sagemaker) -> set[str]:
    pages = sagemaker.get_paginator("list_endpoints").paginate()
    return {endpoint["EndpointName"] for page in pages for endpoint in page["Endpoints"]}


@pytest.mark.parametrize("block", [block for _, block in BLOCKS], ids=[places for places, _ in BLOCKS])
def test_the_marked_block_runs(block: Block, stack, images, user_dir, endpoints_left, tmp_path):
    shell = block.language != "python"
    run_guarded = GuardedRunner(None if shell else stack.data_dir / "env", tmp_path, skip_ahead_sleeps=True)
    run_guarded.env["PATH"] = f"{VENV_BIN}:{run_guarded.env['PATH']}"
    (user_dir / "block").write_text(block.code)

    run = run_guarded(*COMMANDS[block.language], cwd=user_dir, timeout=BLOCK_TIMEOUT)

    assert run.completed.returncode == 0, f"{block.place}\n{block.code}\n{run.report()}"
    assert run.attempts == [], run.report()  # nothing tried to leave the machine
