"""The byte format of the messages between pipeline stages (torch/transport.py), without
processes: whatever a step function's model returns (tensors of any dtype and layout in any
structure, with Python values) must reach the other stages as it was sent, since SageMaker's
smp.step returns the last stage's outputs on every rank."""

import pytest

torch = pytest.importorskip("torch")
from smdistributed.modelparallel.torch.transport import _FIRST, _decode, _encode, message_sizes  # noqa: E402


def round_trip(message):
    payload = _encode(message)
    _, total = message_sizes(payload)
    assert total <= payload.numel() == max(total, _FIRST)  # a small message is one first gloo message
    return _decode(payload, torch.device("cpu"))


def test_tensors_of_every_kind_and_python_values_arrive_as_sent():
    activation = torch.randn(4, 3, requires_grad=True) * 2
    message = {
        "output": (activation, activation.t(), torch.tensor(2.5, dtype=torch.float16),
                   torch.zeros(0, 4), torch.tensor([True, False]), torch.arange(5, dtype=torch.int64)),
        "backward": True, "name": "loss", "sparse": torch.eye(3).to_sparse(),
    }
    received = round_trip(message)
    for sent, got in zip(message["output"], received["output"], strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape and torch.equal(got, sent.detach())
        assert not got.requires_grad  # autograd history stays on the sending stage
    assert received["backward"] is True and received["name"] == "loss"
    assert torch.equal(received["sparse"].to_dense(), torch.eye(3))


def test_received_tensors_own_their_memory():
    payload = _encode([torch.ones(3)])
    (received,) = _decode(payload, torch.device("cpu"))
    payload.zero_()  # the receive buffer is the transport's, not the stage's
    assert torch.equal(received, torch.ones(3))


def test_a_message_larger_than_the_first_gloo_message_keeps_every_byte():
    big = torch.arange(3 * _FIRST, dtype=torch.int32)  # 12 bytes a unit of _FIRST: spans both parts
    (received,) = round_trip([big])
    assert torch.equal(received, big)
