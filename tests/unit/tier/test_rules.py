"""Which steps a node keeps: completeness, retention, what the budget may evict."""

from tier import rules


def test_a_step_is_complete_only_with_every_rank():
    assert rules.complete_steps({1: [0, 1, 2], 2: [0, 2], 3: [1, 0, 2]}, 3) == [3, 1]
    assert rules.complete_steps({1: [0, 1]}, 3) == []


def test_retention_drops_the_oldest_complete_steps_beyond_the_count():
    steps = {step: [0, 1] for step in (1, 2, 3, 4, 5)}
    assert sorted(rules.retention_victims(steps, 2, 3)) == [1, 2]


def test_retention_never_drops_the_newest_complete_step_for_newer_incomplete_ones():
    steps = {10: [0, 1], 11: [0], 12: [0], 13: [0], 14: [1]}
    victims = rules.retention_victims(steps, 2, 2)
    assert 10 not in victims
    assert sorted(victims) == [11]  # incomplete newer steps: at most steps_retained + 1 kept


def test_retention_drops_incomplete_steps_older_than_the_newest_complete_one():
    steps = {9: [0], 10: [0, 1], 11: [1]}
    assert rules.retention_victims(steps, 2, 3) == [9]


def test_a_node_holding_part_of_each_step_keeps_the_newest_retained_plus_one():
    steps = {step: [0] for step in (1, 2, 3, 4, 5)}  # another node holds rank 1
    assert sorted(rules.retention_victims(steps, 2, 3)) == [1]


def test_the_budget_protects_the_newest_complete_step_and_the_steps_being_written():
    assert rules.protected_steps({1: [0, 1], 2: [0, 1], 3: [0], 4: [0], 5: [1]}, 2) == {2, 4, 5}
    assert rules.protected_steps({1: [0], 2: [0], 3: [0]}, 2) == {2, 3}


def test_inventories_of_several_nodes_merge_into_complete_steps():
    merged = rules.merge([{5: [0, 2], 6: [0]}, {5: [1], 6: [2]}])
    assert rules.complete_steps(merged, 3) == [5]
