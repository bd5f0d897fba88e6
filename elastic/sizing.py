"""World sizes a HyperPodPyTorchJob may run at, and how a size is shared out among its replica
groups. Pure: no database, no engine (unit-tested on its own).

- Allowed sizes: `replicaDiscreteValues` within [minReplicas, maxReplicas]; else minReplicas +
  k·`replicaIncrementStep` up to maxReplicas (step 1 when neither is given). A job without an
  elasticPolicy has one size: the sum of its groups' replicas.
- A size is filled group by group in the order of `replicaSpecs`, each group up to its
  maxReplicas. Shrinking therefore takes replicas from the last groups first: a two-level job
  (a base group, then an elastic group) only ever loses its elastic part, since its minimum
  covers the base group.
- Replicas are ranked in that order too (group order, then index): rank 0 is the first replica of
  the first group, which therefore stays the master across resizes."""
from elastic.spec import JobSpec, ReplicaGroup


def allowed_sizes(spec: JobSpec) -> tuple[int, ...]:
    policy = spec.elastic
    if policy is None:
        return (sum(group.replicas for group in spec.groups),)
    if policy.discrete_values:
        values = sorted(set(policy.discrete_values))
        return tuple(v for v in values if policy.min_replicas <= v <= policy.max_replicas)
    step = policy.increment_step or 1
    return tuple(range(policy.min_replicas, policy.max_replicas + 1, step))


def initial_size(spec: JobSpec) -> int:
    """The size a job asks for when it starts: its groups' replicas, clamped to its allowed sizes
    (the largest allowed size not above that, else the smallest allowed one)."""
    sizes = allowed_sizes(spec)
    wanted = sum(group.replicas for group in spec.groups)
    return max((size for size in sizes if size <= wanted), default=sizes[0])


def slots(spec: JobSpec, size: int) -> list[tuple[ReplicaGroup, int]]:
    """The (group, index) of each replica of a world of `size`, in rank order."""
    result: list[tuple[ReplicaGroup, int]] = []
    for group in spec.groups:  # the spec checked that their maxReplicas cover the policy's
        count = min(group.max_replicas, size - len(result))
        result.extend((group, index) for index in range(count))
    return result


def group_counts(spec: JobSpec, size: int) -> dict[str, int]:
    counts = {group.name: 0 for group in spec.groups}
    for group, _ in slots(spec, size):
        counts[group.name] += 1
    return counts


def gpus_for(spec: JobSpec, size: int) -> int:
    """The GPUs a world of `size` holds in all."""
    return sum(group.gpus for group, _ in slots(spec, size))


def dropped(spec: JobSpec, size: int, smaller: int) -> list[tuple[ReplicaGroup, int]]:
    """The replicas a world of `size` loses when it shrinks to `smaller`."""
    return slots(spec, size)[smaller:]
