"""The training the torch tests compare: plain single-process SGD on the whole batch (in the test
process), and the same steps through smp.step on a rank's DP shard (in a World's ranks)."""

import pytest
import smdistributed.modelparallel.torch as smp
import torch
import torch.nn.functional as F


def single_process_training(model, inputs, targets, steps, learning_rate):
    """The loss by step and the final parameters (state_dict order) of the reference training."""
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, list(model.state_dict().values())


def train_on_dp_shard(model, optimizer, inputs, targets, steps):
    """`steps` steps of a DistributedModel with smp.step on this rank's DP shard of the batch; the
    loss by step, averaged over the DP group (the whole batch's loss, as the reference's)."""
    shard = len(inputs) // smp.dp_size()
    rows = slice(smp.dp_rank() * shard, (smp.dp_rank() + 1) * shard)

    @smp.step
    def train_step(x, y):
        loss = F.mse_loss(model(x), y)
        model.backward(loss)
        return loss

    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = train_step(inputs[rows], targets[rows]).reduce_mean()
        optimizer.step()
        losses.append(sum(smp.allgather(loss.item(), smp.DP_GROUP)) / smp.dp_size())
    return losses


def assert_same_training(results, model, inputs, targets, steps, learning_rate):
    """Every rank's loss curve and final parameters are those of the reference training of
    `model` (float64, relative 1e-9: the ranks sum microbatch and DP gradients where the
    reference takes the batch's gradient at once)."""
    expected_losses, expected_parameters = single_process_training(model, inputs, targets, steps,
                                                                   learning_rate)
    assert expected_losses[-1] < expected_losses[0]  # the reference does learn
    for result in results:
        assert result["losses"] == pytest.approx(expected_losses, rel=1e-9, abs=1e-12)
        for got, expected in zip(result["parameters"], expected_parameters, strict=True):
            assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12)
