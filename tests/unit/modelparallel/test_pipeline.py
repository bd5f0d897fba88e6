"""Pipeline parallelism (partitions > 1) in worlds of gloo processes: P = 2 and 4, with and
without data parallelism, both of SageMaker's schedules (`simple`, `interleaved`).

SageMaker's library partitions the model over the MP group so that each rank holds only its
partition, and runs the microbatches of an `smp.step` call through the pipeline; the training it
does is the same as without model parallelism. Tolerance: float64, relative 1e-9 (the pipeline
sums the microbatch gradients where single-process training takes the batch's gradient at once).
"""

import pytest

torch = pytest.importorskip("torch")

from . import training  # noqa: E402
from .pipeline_scenarios import (  # noqa: E402
    LEARNING_RATE,
    LINEAR_PARAMETERS,
    STEPS,
    TREE_PARAMETERS,
    make_problem,
    make_tree,
)

PIPELINE_WORLDS = {"world2_mp": (2, 1), "world4_cluster": (2, 2), "world4_pp": (4, 1), "world8_pp_dp": (4, 2)}


def assert_same_training(results):
    training.assert_same_training(results, make_tree(seed=1), *make_problem(), STEPS, LEARNING_RATE)


@pytest.mark.parametrize("schedule", ["interleaved", "simple"])
@pytest.mark.parametrize("world_name", sorted(PIPELINE_WORLDS))
def test_pipelined_training_matches_single_process_training(request, world_name, schedule):
    partitions, replicas = PIPELINE_WORLDS[world_name]
    results = request.getfixturevalue(world_name).run("pipelined_training", schedule)
    assert_same_training(results)
    for result in results:
        assert result["partitioned"]
        # automatic partitioning balances the four equal Linear layers: 1/P of the parameters per rank
        assert result["local"] == result["held"] == TREE_PARAMETERS // partitions
    layers = sorted(name for result in results[:partitions] for name in result["local_modules"])
    assert layers == ["head.first", "head.second", "tail.first", "tail.second"]  # MP group 0: ranks 0..P-1
    assert {r["pp"][1] for r in results} == {partitions} and {r["pp"][3] for r in results} == {replicas}
    assert {r["pp"][4:] for r in results} == {(0, 1)}


def test_manual_partitions_from_contexts_and_set_partition(world4_pp):
    """`auto_partition: false`: smp.partition(i) around module creation (innermost wins) and
    smp.set_partition place one Linear layer on each of the four partitions."""
    results = world4_pp.run("pipelined_training", "simple", True)
    assert_same_training(results)
    assert [r["local_modules"] for r in results] == [["head.first"], ["head.second"], ["tail.first"],
                                                      ["tail.second"]]
    assert [r["local"] for r in results] == [LINEAR_PARAMETERS] * 4


def test_evaluation_returns_python_numbers_as_lists_on_every_rank(world4_pp):
    """AWS's smmodelparallel_pt_mnist.py sums the per-microbatch numbers an evaluation step returns."""
    model = make_tree(seed=1)
    inputs, targets = make_problem()
    with torch.no_grad():
        output = model(inputs)
    expected_loss = torch.nn.functional.mse_loss(output, targets, reduction="sum").item()
    expected_correct = output.argmax(dim=1).eq(targets.argmax(dim=1)).sum().item()
    for result in world4_pp.run("pipelined_evaluation"):
        assert len(result["loss"]) == len(result["correct"]) == 4  # microbatches
        assert sum(result["loss"]) == pytest.approx(expected_loss, rel=1e-9)
        assert sum(result["correct"]) == expected_correct
        assert torch.allclose(result["output"], output, rtol=1e-9, atol=1e-12) and not result["grad"]


def test_a_module_that_cannot_be_split_is_refused_by_name(world2_mp):
    world2_mp.run("unsplittable_modules_are_refused")


def test_a_step_that_failed_part_way_leaves_the_pipeline_usable(world2_mp):
    model = make_tree(seed=1)
    inputs, targets = make_problem()
    expected = torch.nn.functional.mse_loss(model(inputs), targets, reduction="sum").item()
    losses = world2_mp.run("a_failed_step_leaves_the_pipeline_usable")
    assert losses == pytest.approx([expected] * 2, rel=1e-9)


def test_distributed_model_options_and_the_pipeline_group_names(world4_cluster):
    """PP_GROUP / RDP_GROUP: SageMaker's names of the MP / DP groups without tensor parallelism."""
    results = world4_cluster.run("constructor_options")
    assert results == [[[0, 1], [0, 2]], [[0, 1], [1, 3]], [[2, 3], [0, 2]], [[2, 3], [1, 3]]]


def test_local_and_full_state_dicts(world4_pp):
    owned = world4_pp.run("state_dicts_of_a_partitioned_model")
    assert owned == [[f"{layer}.{kind}" for kind in ("bias", "weight")]
                     for layer in ("head.first", "head.second", "tail.first", "tail.second")]
