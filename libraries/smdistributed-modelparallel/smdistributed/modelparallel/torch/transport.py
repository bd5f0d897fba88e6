"""Activations, gradients and model outputs between the stages of an MP group.

A message is any structure of tensors and Python values, serialised with torch.save and sent
as two gloo messages (length, then bytes) with a tag per kind of message and per step, so that
the kinds travel independently between the same two ranks, never mix with the smp.send /
smp.recv_from messages of user code (tag 0), and a step that failed part-way (its step function
raised on every rank) leaves no message that a later step would take for its own. Sends do not
wait for the receiver (they are waited for when the step ends), so that no stage waits on a
stage that waits on it: the schedules' receives alone order the pipeline.

Tensors travel through host memory over gloo also when the job's backend is NCCL: NCCL's
point-to-point calls run in order on one stream per pair of ranks, and the one-forward-one-
backward schedule would have a stage's send of an activation wait for a receive that its peer
posts only after a send that waits on this stage.
"""

import io
import itertools

import torch
import torch.distributed as dist

from .state import state

ACTIVATION, GRADIENT, OUTPUT = range(3)  # the kinds of message
_KINDS = 3
_TAG_STEPS = 1 << 20  # tags are ints: step numbers wrap around after this many steps
_steps = itertools.count()  # this process's pipelined steps; every rank of a job runs the same ones


class Transport:
    """The messages of one pipelined step."""

    def __init__(self):
        self._group = state().world.objects
        self._first_tag = 1 + _KINDS * (next(_steps) % _TAG_STEPS)
        self._pending = []  # sends in flight with the buffers they send from

    def send(self, obj, dst, kind):
        tag = self._first_tag + kind
        buffer = io.BytesIO()
        torch.save(_to_cpu(obj), buffer)
        payload = torch.frombuffer(bytearray(buffer.getbuffer()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
        self._pending.append((length, payload, dist.isend(length, dst=dst, group=self._group, tag=tag),
                              dist.isend(payload, dst=dst, group=self._group, tag=tag)))

    def recv(self, src, kind, device):
        tag = self._first_tag + kind
        length = torch.empty(1, dtype=torch.int64)
        dist.recv(length, src=src, group=self._group, tag=tag)
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
        dist.recv(payload, src=src, group=self._group, tag=tag)
        return torch.load(io.BytesIO(payload.numpy().tobytes()), map_location=device, weights_only=False)

    def finish(self):
        """Wait until every send of this step left."""
        for _, _, length_sent, payload_sent in self._pending:
            length_sent.wait()
            payload_sent.wait()
        self._pending.clear()


def _to_cpu(obj):
    return torch.utils._pytree.tree_map(lambda v: v.detach().cpu() if isinstance(v, torch.Tensor) else v, obj)
