"""Allowed world sizes and how a size is shared among replica groups."""
from elastic import sizing
from elastic.spec import parse
from tests.unit.elastic.fakes import manifest


def spec_of(**kwargs):
    return parse(manifest(**kwargs))


def test_sizes_follow_the_increment_step_from_the_minimum():
    spec = spec_of(elastic={"minReplicas": 2, "maxReplicas": 8, "replicaIncrementStep": 2},
                   groups=[{"name": "pods", "replicas": 2, "max_replicas": 8}])
    assert sizing.allowed_sizes(spec) == (2, 4, 6, 8)


def test_sizes_are_the_discrete_values_and_every_size_without_a_rule():
    discrete = spec_of(elastic={"minReplicas": 1, "maxReplicas": 8, "replicaDiscreteValues": [8, 2, 4]},
                       groups=[{"name": "pods", "replicas": 2, "max_replicas": 8}])
    free = spec_of(elastic={"minReplicas": 1, "maxReplicas": 3},
                   groups=[{"name": "pods", "replicas": 1, "max_replicas": 3}])
    assert sizing.allowed_sizes(discrete) == (2, 4, 8)
    assert sizing.allowed_sizes(free) == (1, 2, 3)


def test_a_job_without_elastic_policy_has_one_size():
    spec = spec_of(groups=[{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}])
    assert sizing.allowed_sizes(spec) == (3,)
    assert sizing.group_counts(spec, 3) == {"a": 2, "b": 1}


def test_a_two_level_job_grows_and_shrinks_in_its_elastic_group_only():
    spec = spec_of(
        elastic={"minReplicas": 2, "maxReplicas": 8, "replicaIncrementStep": 2},
        groups=[{"name": "base", "replicas": 2, "priority_class": "high"},
                {"name": "elastic", "replicas": 0, "max_replicas": 6, "priority_class": "low"}],
    )
    assert sizing.group_counts(spec, 2) == {"base": 2, "elastic": 0}
    assert sizing.group_counts(spec, 6) == {"base": 2, "elastic": 4}
    assert [(group.name, index) for group, index in sizing.dropped(spec, 6, 2)] == [
        ("elastic", 0), ("elastic", 1), ("elastic", 2), ("elastic", 3)]
    assert sizing.gpus_for(spec, 6) == 6


def test_the_initial_size_is_the_groups_replicas_within_the_allowed_sizes():
    spec = spec_of(elastic={"minReplicas": 1, "maxReplicas": 8, "replicaDiscreteValues": [2, 4, 8]},
                   groups=[{"name": "pods", "replicas": 3, "max_replicas": 8}])
    assert sizing.initial_size(spec) == 2
    lone = spec_of(elastic={"minReplicas": 1, "maxReplicas": 4},
                   groups=[{"name": "pods", "replicas": 1, "max_replicas": 4}])
    assert sizing.initial_size(lone) == 1
