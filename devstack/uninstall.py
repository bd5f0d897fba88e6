"""Removing an installation from this host (`make clean`): the containers and networks its
runtime created, found by this installation's stack label only, the checkpoints its nodes' tier
services keep in memory, then its data directory.

Nothing is found by name: a container or network without `sageport.stack=<this stack id>` (the
user's own, another installation's, another test session's) is never touched. The data directory
is removed only when it is recognisably Sageport's (`runstack` and `runnode` mark it, and an
older one holds the SQLite database), so a mistyped SAGEPORT_DATA_DIR cannot delete a stranger's
files."""

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runtime import labels
from runtime.base import ContainerRuntime

MARKER = ".sageport-data-dir"
# Files only a Sageport data directory holds (not the secret key: reading the settings creates it).
DATA_DIR_MARKERS = (MARKER, "sageport.sqlite3")


def mark(data_dir: Path) -> None:
    """Say that `data_dir` is a Sageport data directory, which `make clean` may remove."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / MARKER).write_text("A Sageport data directory: `make clean` removes it.\n")


@dataclass
class Removed:
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    data_dir: Path | None = None
    kept_data_dir: str = ""  # why the data directory was left in place


def uninstall(
    runtime: ContainerRuntime, stack_id: str, data_dir: Path, keep_data: bool, tier_memory_dir: Path
) -> Removed:
    removed = Removed()
    # The checkpoint tier's memory (clusters/tier_service.py) of each of this stack's nodes.
    for memory in tier_memory_dir.glob(f"sageport-tier-{stack_id}-*"):
        shutil.rmtree(memory, ignore_errors=True)
    mine = {labels.STACK: stack_id}
    for state in runtime.find(mine):  # stopped ones too
        runtime.remove(state.name)
        removed.containers.append(state.name)
    for network in runtime.find_networks(mine):  # after their containers, which hold them
        runtime.remove_network(network)
        removed.networks.append(network)
    if keep_data:
        removed.kept_data_dir = "kept as asked (--keep-data)"
    elif not any((data_dir / marker).is_file() for marker in DATA_DIR_MARKERS):
        removed.kept_data_dir = f"not removed: it holds none of {', '.join(DATA_DIR_MARKERS)}"
    else:
        shutil.rmtree(data_dir)
        removed.data_dir = data_dir
    return removed
