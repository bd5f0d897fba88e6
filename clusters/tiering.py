"""PLACEHOLDER until clusters-api merges (replaced by its version)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeTier:
    cluster_name: str
    memory_percentage: int
    ring: tuple[str, ...]


def tier_for_node(node_name: str) -> NodeTier | None:
    return None
