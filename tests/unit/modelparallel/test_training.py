"""A small model trained with DistributedModel/DistributedOptimizer follows the single-process
loss curve at partitions 1 and 2, in worlds of 2 and 4."""

import pytest

torch = pytest.importorskip("torch")

from .scenarios import LEARNING_RATE, STEPS, make_model, make_problem  # noqa: E402
from .training import assert_same_training  # noqa: E402


@pytest.mark.parametrize("world_name", ["world2_dp", "world2_mp", "world4_cluster", "world4_spread"])
def test_distributed_training_matches_single_process_training(request, world_name):
    results = request.getfixturevalue(world_name).run("distributed_training")
    assert_same_training(results, make_model(seed=1), *make_problem(), STEPS, LEARNING_RATE)
