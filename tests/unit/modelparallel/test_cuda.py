"""On a machine with an NVIDIA GPU: the library picks NCCL, places the model on the rank's GPU and
trains as on the CPU. Skipped where torch sees no GPU (CI has none); run on a GPU host with
`pytest --confcutdir=tests/unit/modelparallel tests/unit/modelparallel/test_cuda.py`."""

import pytest

torch = pytest.importorskip("torch")

# imported before the skip, so that a machine without a GPU (CI) still checks that they exist
from .scenarios import LEARNING_RATE, STEPS, make_model, make_problem  # noqa: E402
from .training import single_process_training  # noqa: E402
from .world import World  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU", allow_module_level=True)


@pytest.fixture(scope="module")
def world1_gpu():
    world = World(1, {"partitions": 1})
    yield world
    world.close()


def test_one_rank_trains_on_its_gpu_over_nccl_like_the_cpu_reference(world1_gpu):
    expected_losses, expected_parameters = single_process_training(make_model(seed=1), *make_problem(),
                                                                   STEPS, LEARNING_RATE)
    (result,) = world1_gpu.run("cuda_training")
    assert result["backend"] == "nccl"
    assert result["devices"] == ["cuda:0"]
    assert result["all_reduce"].tolist() == [1.0, 1.0, 1.0]
    # float64 on the GPU: other kernels than the CPU's, so agreement to rounding, not bit for bit
    assert result["losses"] == pytest.approx(expected_losses, rel=1e-9)
    for got, expected in zip(result["parameters"], expected_parameters, strict=True):
        assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12)
