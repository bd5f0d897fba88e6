"""The TensorFlow variant (smdistributed.modelparallel.tensorflow) in worlds of 2 and 4 processes
on the CPU: ranks and groups, the communication primitives, smp.step with microbatches and
StepOutput, and a Keras DistributedModel trained data-parallel against one process training on
the global batch. The behaviour checked is SageMaker's common API and v1 TensorFlow API
(sagemaker-python-sdk doc/api/training/smp_versions/latest/smd_model_parallel_common_api.rst and
smd_model_parallel_tensorflow.rst). TensorFlow runs in the ranks only (tf_scenarios.py)."""

import importlib.util

import numpy as np
import pytest

from .world import World

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow-cpu is not installed (the test extra installs it: pip install -e '.[test]')",
                allow_module_level=True)

W4_GROUPS = {"mp": [[0, 1], [0, 1], [2, 3], [2, 3]], "dp": [[0, 2], [1, 3], [0, 2], [1, 3]]}  # cluster
W2_GROUPS = {"mp": [[0], [1]], "dp": [[0, 1], [0, 1]]}  # one partition: two replicas
# A world's first scenario includes every rank importing TensorFlow and tracing its first
# tf.function: on a busy 2-core machine, four ranks need more than the torch worlds' 120 s.
SCENARIO_TIMEOUT = 300.0


def payload_from(rank):
    return {"sender": rank, "values": {"nested": [rank, (rank,)], "array": np.arange(3) + rank}}


def same(got, expected):
    """Equality for payloads holding numpy arrays."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and got.keys() == expected.keys() and all(
            same(got[k], expected[k]) for k in expected)
    if isinstance(expected, np.ndarray):
        return np.array_equal(got, expected)
    return got == expected


@pytest.fixture(scope="module")
def tf_world4():
    """Four ranks started as torchrun starts them: two partitions, two replicas, two microbatches."""
    world = World(4, {"partitions": 2, "microbatches": 2, "placement_strategy": "cluster"}, "torchrun",
                  scenarios="tf_scenarios", scenario_timeout=SCENARIO_TIMEOUT)
    yield world
    world.close()


@pytest.fixture(scope="module")
def tf_world2():
    """Two ranks started as mpirun starts them (rendezvous from SM_HOSTS): two replicas of one
    partition, four microbatches."""
    world = World(2, {"partitions": 1, "microbatches": 4}, "mpirun", scenarios="tf_scenarios",
                  scenario_timeout=SCENARIO_TIMEOUT)
    yield world
    world.close()


@pytest.fixture(params=["tf_world4", "tf_world2"])
def world(request):
    groups = W4_GROUPS if request.param == "tf_world4" else W2_GROUPS
    return request.getfixturevalue(request.param), groups


def test_ranks_sizes_and_groups(world):
    world, groups = world
    for rank, layout in enumerate(world.run("layout")):
        assert layout["rank"] == rank and layout["size"] == world.size
        assert layout["local_rank"] == rank and layout["local_size"] == world.size
        assert layout["mp_group"] == groups["mp"][rank] and layout["dp_group"] == groups["dp"][rank]
        assert layout["mp_size"] == len(groups["mp"][rank]) and layout["dp_size"] == len(groups["dp"][rank])
        assert layout["mp_group"][layout["mp_rank"]] == rank and layout["dp_group"][layout["dp_rank"]] == rank


def test_allgather_returns_every_members_object_in_group_rank_order(world):
    world, groups = world
    for rank, gathered in enumerate(world.run("allgather")):
        assert all(same(got, payload_from(r)) for r, got in enumerate(gathered["world"]))
        assert gathered["mp"] == [{"rank": r} for r in groups["mp"][rank]]
        assert gathered["dp"] == groups["dp"][rank]


@pytest.mark.parametrize("rank_type", ["WORLD_RANK", "MP_RANK", "DP_RANK"])
def test_send_and_recv_from_exchange_objects_within_the_rank_types_group(tf_world4, rank_type):
    received = tf_world4.run("send_and_receive", rank_type)
    groups = {"WORLD_RANK": [[0, 1, 2, 3]] * 4, "MP_RANK": W4_GROUPS["mp"],
              "DP_RANK": W4_GROUPS["dp"]}[rank_type]
    for rank, obj in enumerate(received):
        first, last = groups[rank][0], groups[rank][-1]
        if rank == first:
            assert obj == {"reply from": last}
        elif rank == last:
            assert same(obj, payload_from(first))
        else:
            assert obj is None


@pytest.mark.parametrize("group", ["WORLD", "MP_GROUP", "DP_GROUP"])
def test_broadcast_reaches_every_member_through_recv_from(tf_world4, group):
    groups = {"WORLD": [[0, 1, 2, 3]] * 4, "MP_GROUP": W4_GROUPS["mp"], "DP_GROUP": W4_GROUPS["dp"]}[group]
    for rank, obj in enumerate(tf_world4.run("broadcast", group)):
        root = groups[rank][0]
        assert obj is None if rank == root else same(obj, payload_from(root))


def test_send_returns_only_after_the_receiver_called_recv_from(tf_world4, tmp_path):
    """The seed: "the send statement returns only after the destination rank has made a matching
    recv_from call"."""
    results = tf_world4.run("send_waits_for_receiver", str(tmp_path))
    assert results[:2] == [True, "synchronous"]


@pytest.mark.parametrize("group", ["WORLD", "MP_GROUP", "DP_GROUP"])
def test_barrier_waits_for_the_groups_last_member(tf_world4, tmp_path, group):
    assert tf_world4.run("barrier_waits", group, str(tmp_path)) == [True] * 4


def test_wrong_ranks_and_groups_are_refused_clearly(tf_world4):
    for errors in tf_world4.run("wrong_ranks_and_groups"):
        assert errors["self"].startswith("ValueError: MP_RANK") and "this process itself" in errors["self"]
        assert errors["outside"] == "ValueError: rank 4 does not exist for WORLD_RANK: valid ranks are 0..3"
        assert errors["rank type"].startswith("TypeError: rank_type must be an smp.RankType")
        assert errors["group"].startswith("TypeError: group must be an smp.CommGroup")


def test_step_splits_tensors_containers_and_smp_slice_objects_into_microbatches(tf_world2):
    """Four microbatches: a tensor along axis 0, one along its input_split_axes axis, a
    non_split_inputs tensor whole in every microbatch, dict and list members, an smp_slice type."""
    for seen in tf_world2.run("step_splits_arguments"):
        rows = np.arange(8.0).reshape(4, 2)
        columns = np.arange(8.0).reshape(2, 4)
        assert [r.tolist() for r in seen["rows"]] == [rows[i:i + 1].tolist() for i in range(4)]
        assert [c.tolist() for c in seen["columns"]] == [columns[:, i:i + 1].tolist() for i in range(4)]
        assert [float(s) for s in seen["scale"]] == [3.0] * 4
        assert [a.tolist() for a in seen["nested"][0]] == [[float(i)] for i in range(4)]
        assert [b.tolist() for b in seen["nested"][1]] == [[10.0 * i] for i in range(4)]
        assert [w.tolist() for w in seen["window"]] == [[100.0 + i] for i in range(4)]


@pytest.mark.parametrize("world_name,num_mb", [("tf_world4", 2), ("tf_world2", 4)])
def test_step_output_reductions_merge_and_accumulate(request, world_name, num_mb):
    """reduce_mean/reduce_sum/concat/stack, and the TensorFlow-only merge() (concatenation along
    the batch) and accumulate() (the value of reduce_mean, with each of its three methods and a
    given variable), in a tf.function and eagerly."""
    x = np.arange(2.0 * 3 * num_mb).reshape(2 * num_mb, 3)
    versions = [2.0 * x[2 * mb:2 * mb + 2] for mb in range(num_mb)]
    mean = sum(versions) / num_mb
    for result in request.getfixturevalue(world_name).run("step_output_reductions", num_mb):
        graph = result["graph"]
        assert np.allclose(graph["reduce_mean"], mean) and np.allclose(graph["reduce_sum"], mean * num_mb)
        assert np.array_equal(graph["concat"], 2.0 * x) and np.array_equal(graph["merge"], 2.0 * x)
        assert np.array_equal(graph["stack"], np.stack(versions))
        for method in ("accumulate", "accumulate add_n", "accumulate_n", "accumulate var"):
            assert np.allclose(graph[method], mean), method
        assert np.allclose(result["given"], (mean + 2.0) * num_mb)  # the sum, of the last call
        assert np.allclose(result["again"], mean + 2.0)  # accumulating starts anew each call
        assert np.allclose(result["eager mean"], mean) and np.array_equal(result["eager merge"], 2.0 * x)
        assert [o.tolist() for o in result["outputs"]] == [v.tolist() for v in versions]


def test_step_and_unsupported_api_errors(tf_world2):
    for errors in tf_world2.run("step_errors", 4):
        assert "batch size 5 (axis 0) is not divisible by the number of microbatches (4)" in (
            errors["indivisible"])
        assert "0-dimensional tensor" in errors["scalar"] and "non_split_inputs" in errors["scalar"]
        assert "split axis 3 does not exist" in errors["axis"]
        # errors raised while tracing reach the caller as TensorFlow re-raises them: the same type,
        # the message after TensorFlow's own account of the user code
        assert errors["nested"].startswith("RuntimeError") and "smp.step functions cannot be nested" in (
            errors["nested"])
        assert "non_split_inputs names ['nope']" in errors["unknown name"]
        assert errors["model outside step"] == (
            "RuntimeError: a smp.DistributedModel can only be called inside an smp.step function")
        assert "accumulate method must be one of" in errors["accumulate method"]
        assert errors["partition"].startswith(
            "NotImplementedError: smdistributed.modelparallel.tensorflow: smp.partition is not implemented")


def test_checkpoint_manager_saves_once_per_host_and_restores_latest_and_named(tf_world4, tmp_path):
    """smd_model_parallel_tensorflow.rst's smp.CheckpointManager: save() writes a new checkpoint
    in the directory (here local rank 0 of the one host writes it; every rank gets its path),
    restore() restores the latest, restore(restore_prefix="ckpt-1") a named one, on every rank."""
    for result in tf_world4.run("checkpoint_roundtrip", str(tmp_path)):
        assert result["first path"] == str(tmp_path / "ckpt-1")
        assert "checkpoint" in result["files"] and "ckpt-2.index" in result["files"]
        assert result["moved on"] and result["latest restored"] and result["named restored"]


def test_a_post_partition_hook_runs_once_eagerly_before_the_first_forward_pass(tf_world2):
    """smd_model_parallel_tensorflow.rst: "executed after the model is partitioned during the first
    call to smp.step, but before the actual execution of the first forward pass" (here the model
    is never partitioned); the step is traced once, in graph mode, its function once per each of
    the four microbatches."""
    assert tf_world2.run("post_partition_hook") == [[("hook", True)] + [("forward", False)] * 4] * 2


@pytest.mark.parametrize("world_name", ["tf_world4", "tf_world2"])
def test_data_parallel_training_matches_single_process_training(request, world_name, tmp_path):
    """Replicas start from rank 0's weights (each rank seeds its initializers differently),
    their gradients are averaged over the DP group, and the loss curve and final parameters are
    those of one process training on the global batch, to 1e-9 in float64 (the microbatch and
    replica means are summed in another order than the full batch's mean). save_model() then
    writes the trained model as a SavedModel that serves the same predictions."""
    for result in request.getfixturevalue(world_name).run("distributed_training", str(tmp_path / "model")):
        assert result["expected losses"][-1] < result["expected losses"][0]  # the reference does learn
        assert result["losses"] == pytest.approx(result["expected losses"], rel=1e-9, abs=1e-12)
        for got, expected in zip(result["parameters"], result["expected parameters"], strict=True):
            assert np.allclose(got, expected, rtol=1e-9, atol=1e-12)
        assert result["saved model error"] < 1e-12
