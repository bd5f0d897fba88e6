"""@smp.step in real worlds: 2 microbatches (world of 2 replicas) and 4 (2 partitions)."""

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(params=["world2_dp", "world2_mp"])
def world(request):
    return request.getfixturevalue(request.param)


def test_the_microbatch_count_comes_from_the_parameters(world2_dp, world2_mp):
    assert world2_dp.run("step_splits_arguments") == [2, 2]
    assert world2_mp.run("step_splits_arguments") == [4, 4]


def test_tensors_split_along_their_axes_and_non_split_inputs_pass_whole(world):
    world.run("step_splits_arguments")


def test_nested_structures_and_smp_slice_objects_are_split(world):
    world.run("step_splits_nested_structures")


def test_a_decorated_method_gets_its_instance_and_split_arguments(world):
    world.run("step_on_a_method")


def test_tensor_outputs_become_step_outputs_with_every_reduction(world):
    world.run("step_output_reductions")


def test_outputs_are_detached_unless_detach_outputs_is_false(world):
    world.run("step_detaches_outputs")


def test_bad_inputs_and_bad_uses_of_step_are_refused_clearly(world):
    world.run("step_errors")


def test_optimizer_step_inside_smp_step_is_refused(world):
    world.run("optimizer_step_inside_step_fails")
