"""Which steps of a namespace a node keeps, as pure functions of what it holds there:
`steps` maps each step to the ranks whose shards this node has.

A step is complete when every one of the namespace's `num_ranks` shards is present (the DCP
metadata shard, rank W, is written last, after every data rank succeeded). A node of a
multi-node job holds only part of each step (its containers' ranks and its neighbour's
replicas), so steps newer than its newest complete one are kept too, up to one more than the
retention (the step being written)."""

from collections.abc import Collection, Mapping

Steps = Mapping[int, Collection[int]]


def is_complete(ranks: Collection[int], num_ranks: int) -> bool:
    return len(set(ranks) & set(range(num_ranks))) == num_ranks


def complete_steps(steps: Steps, num_ranks: int) -> list[int]:
    """Newest first."""
    return sorted((step for step, ranks in steps.items() if is_complete(ranks, num_ranks)), reverse=True)


def retention_victims(steps: Steps, num_ranks: int, steps_retained: int) -> list[int]:
    """The steps to drop: complete ones beyond the newest `steps_retained`, incomplete ones older
    than the newest complete step (they will not complete), and incomplete ones beyond the newest
    `steps_retained + 1` of those newer than it. Never the newest complete step."""
    complete = complete_steps(steps, num_ranks)
    newest = complete[0] if complete else None
    incomplete = sorted((step for step in steps if step not in set(complete)), reverse=True)
    stale = [step for step in incomplete if newest is not None and step < newest]
    fresh = [step for step in incomplete if newest is None or step > newest]
    return complete[max(steps_retained, 1):] + stale + fresh[steps_retained + 1:]


def protected_steps(steps: Steps, num_ranks: int) -> set[int]:
    """What the RAM budget never evicts: the newest complete step and the (at most two) newer
    steps still being written or completed across nodes."""
    complete = complete_steps(steps, num_ranks)
    newest = complete[0] if complete else None
    fresh = sorted((step for step in steps if newest is None or step > newest), reverse=True)
    return set(fresh[:2]) | ({newest} if newest is not None else set())


def merge(inventories: list[Steps]) -> dict[int, set[int]]:
    """The union of several nodes' inventories of one namespace."""
    merged: dict[int, set[int]] = {}
    for steps in inventories:
        for step, ranks in steps.items():
            merged.setdefault(step, set()).update(ranks)
    return merged
