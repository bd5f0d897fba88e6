"""SageMaker's v1 API around the pipeline, in worlds of gloo processes: DistributedOptimizer,
smp.save / smp.load across a restart, smp.amp.GradScaler, the aliases, and NotImplementedError
for what is not built. The behaviour checked is that of SageMaker's smdistributed.modelparallel
v1 PyTorch API reference (sagemaker-python-sdk, doc/api/training/smp_versions/latest/
smd_model_parallel_pytorch.rst, and its common API page)."""

import pytest

torch = pytest.importorskip("torch")

import smdistributed.modelparallel.torch as smp  # noqa: E402

from .world import World  # noqa: E402

S = "surface_scenarios."
MP_PARAMETERS = {"partitions": 2, "microbatches": 2, "placement_strategy": "cluster", "ddp": True}


def test_the_optimizer_is_a_torch_optimizer_that_schedulers_drive(world4_cluster):
    assert world4_cluster.run(S + "optimizer_drives_a_scheduler") == [[0.05, 0.025, 0.0125]] * 4


def test_optimizer_state_dicts_local_and_full_load_back(world4_cluster):
    results = world4_cluster.run(S + "optimizer_state_dicts")
    assert all(r == results[0] for r in results)  # the full state dict is the same everywhere
    assert results[0]["steps"] == [2.0] * 8  # every parameter of the model, stepped twice


def test_a_partial_optimizer_state_of_another_partition_is_refused(world2_mp):
    world2_mp.run(S + "optimizer_rejects_another_partitions_state")


@pytest.fixture
def restarted_world():
    """A fresh world with the same layout: a job restarted from its checkpoint."""
    world = World(4, MP_PARAMETERS)
    yield world
    world.close()


def test_partial_and_full_checkpoints_resume_training_after_a_restart(
    world4_cluster, restarted_world, tmp_path
):
    """SageMaker: partial=True writes one file per mp_rank (`f` with the rank appended), full
    one file; both, loaded on every rank, continue training exactly where the job left it."""
    saved = world4_cluster.run(S + "save_checkpoints", str(tmp_path))
    assert saved[0]["files"] == ["checkpoint.pt", "checkpoint.pt_0_0", "checkpoint.pt_1_0"]
    for partial in (True, False):
        resumed = restarted_world.run(S + "resume_from", str(tmp_path), partial)
        for before, after in zip(saved, resumed, strict=True):
            assert after["later_losses"] == pytest.approx(before["later_losses"], rel=1e-12)
            assert after["parameters"].keys() == before["parameters"].keys()
            for name, value in before["parameters"].items():
                assert torch.allclose(after["parameters"][name], value, rtol=1e-12, atol=1e-15), name


def test_checkpoint_folders_resume_training_after_a_restart(world4_cluster, restarted_world, tmp_path):
    """SageMaker's save_checkpoint layout: `{tag}_partial/` per partial checkpoint (only the newest
    num_kept_partial_checkpoints kept), the file `{tag}` for a full one, `user_content_{tag}` and
    `newest`; resume_from_checkpoint (the newest when no tag) loads model and optimizer and
    returns the user content."""
    saved = world4_cluster.run(S + "save_checkpoint_folders", str(tmp_path))
    assert saved[0]["newest"] == "model.pt"
    assert saved[0]["files"] == [
        "model.pt", "model.pt_optimizer", "newest", "step2_partial", "step2_partial/model_0_0.pt",
        "step2_partial/model_1_0.pt", "step2_partial/optimizer_0_0.pt", "step2_partial/optimizer_1_0.pt",
        "step2_partial/user_content.pt", "user_content_model.pt",
    ]
    for partial in (True, False):
        resumed = restarted_world.run(S + "resume_checkpoint_folder", str(tmp_path), partial)
        for before, after in zip(saved, resumed, strict=True):
            assert after["user_content"] == {"step": 2}
            assert after["later_losses"] == pytest.approx(before["later_losses"], rel=1e-12)
            for name, value in before["parameters"].items():
                assert torch.allclose(after["parameters"][name], value, rtol=1e-12, atol=1e-15), name


def test_loading_a_checkpoint_that_is_not_there_names_the_file(world2_dp, tmp_path):
    world2_dp.run(S + "load_errors", str(tmp_path))


@pytest.mark.parametrize("overflow_rank", [0, 3])
def test_an_overflow_in_one_stage_skips_the_step_on_every_rank(world4_cluster, overflow_rank):
    """torch's GradScaler skips optimizer.step() when the gradients it unscaled hold inf/nan and
    halves the scale; here the gradients of one rank only hold one."""
    for result in world4_cluster.run(S + "grad_scaler_skips_the_step_everywhere", overflow_rank):
        assert result == [{"stepped": False, "scale": 512.0}, {"stepped": True, "scale": 512.0}]


def test_sagemakers_aliases(world4_cluster):
    for rank, result in enumerate(world4_cluster.run(S + "aliases")):
        assert result == {
            "initialized": True, "tp": (0, 1), "rdp": (rank // 2, 2), "dp": (rank // 2, 2),
            "sizes": {"world": 4, "mp": 2, "pp": 2, "dp": 2, "rdp": 2}, "tracing": False,
            "created": torch.float64, "default_after": torch.float32,
        }


@pytest.mark.parametrize("call, name", [
    (lambda: smp.nn.DistributedLinear(4, 4), "smp.nn.DistributedLinear"),
    (lambda: smp.nn.DistributedTransformerLMHead(), "smp.nn.DistributedTransformerLMHead"),
    (lambda: smp.nn.FusedLayerNorm(4), "smp.nn.FusedLayerNorm"),
    (lambda: smp.optimizers.FusedLamb([]), "smp.optimizers.FusedLamb"),
    (lambda: smp.tensor_parallelism().__enter__(), "smp.tensor_parallelism"),
    (lambda: smp.model_creation(tensor_parallelism=True).__enter__(), "tensor_parallelism=True"),
    (lambda: smp.delay_param_initialization().__enter__(), "smp.delay_param_initialization"),
    (lambda: smp.set_tensor_parallelism(torch.nn.Linear(1, 1)), "smp.set_tensor_parallelism"),
    (lambda: smp.tp_register_with_module(torch.nn.Linear, torch.nn.Linear), "smp.tp_register_with_module"),
    (lambda: smp.set_activation_checkpointing(torch.nn.Linear(1, 1)), "smp.set_activation_checkpointing"),
    (lambda: smp.patches.checkpoint.checkpoint(torch.nn.Linear(1, 1)), "smp.patches.checkpoint.checkpoint"),
    (lambda: smp.resume_from_checkpoint("/tmp", translate_function=dict), "translate_function"),
    (lambda: smp.get_tp_process_group(), "smp.get_tp_process_group"),
    (lambda: smp.DistributedOptimizer(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1),
                                      dynamic_loss_scale=True), "dynamic_loss_scale"),
])
def test_what_is_not_built_raises_naming_it(call, name):
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        call()


def test_disabled_features_and_is_initialized_need_no_init():
    """tensor_parallelism(False) and delay_param_initialization(False) ask for nothing missing."""
    with smp.tensor_parallelism(enabled=False), smp.delay_param_initialization(enabled=False):
        pass
    assert smp.is_initialized() is False  # this test process never calls smp.init()
