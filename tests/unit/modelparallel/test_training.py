"""A small model trained with DistributedModel/DistributedOptimizer follows the single-process
loss curve at partitions 1 and 2, in worlds of 2 and 4."""

import pytest

torch = pytest.importorskip("torch")

from .scenarios import LEARNING_RATE, STEPS, make_model, make_problem  # noqa: E402


def single_process_training():
    model = make_model(seed=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    inputs, targets = make_problem()
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach() for p in model.parameters()]


@pytest.mark.parametrize("world_name", ["world2_dp", "world2_mp", "world4_cluster", "world4_spread"])
def test_distributed_training_matches_single_process_training(request, world_name):
    expected_losses, expected_parameters = single_process_training()
    assert expected_losses[-1] < expected_losses[0]  # the reference does learn
    for result in request.getfixturevalue(world_name).run("distributed_training"):
        assert result["losses"] == pytest.approx(expected_losses, rel=1e-9, abs=1e-12)
        for got, expected in zip(result["parameters"], expected_parameters, strict=True):
            assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12)
