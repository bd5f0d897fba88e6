"""Activations, gradients and model outputs between the stages of an MP group.

A message is any structure of tensors and Python values, sent as two gloo messages (the sizes,
then one byte buffer) with a tag per kind of message and per step, so that the kinds travel
independently between the same two ranks, never mix with the smp.send / smp.recv_from messages
of user code (tag 0), and a step that failed part-way (its step function raised on every rank)
leaves no message that a later step would take for its own. Sends do not wait for the receiver
(they are waited for when the step ends), so that no stage waits on a stage that waits on it:
the schedules' receives alone order the pipeline.

The buffer is the message pickled with each dense tensor replaced by its dtype and shape (a
header of some bytes), then the tensors' raw bytes, each at an aligned offset: a tensor is copied
once into the buffer and once out of it, never serialised (torch.save and torch.load cost ~1 ms
each a message, as much as a stage's compute of a microbatch on a small model). Tensors that are
not dense (sparse, quantized) are pickled inside the header as pickle does it.

Tensors travel through host memory over gloo also when the job's backend is NCCL: NCCL's
point-to-point calls run in order on one stream per pair of ranks, and the one-forward-one-
backward schedule would have a stage's send of an activation wait for a receive that its peer
posts only after a send that waits on this stage.
"""

import io
import itertools
import pickle

import torch
import torch.distributed as dist

from .state import state

ACTIVATION, GRADIENT, OUTPUT = range(3)  # the kinds of message
_KINDS = 3
_TAG_STEPS = 1 << 20  # tags are ints: step numbers wrap around after this many steps
_ALIGN = 64  # byte offset of each tensor in the buffer: any dtype can be viewed there
_steps = itertools.count()  # this process's pipelined steps; every rank of a job runs the same ones


class Transport:
    """The messages of one pipelined step."""

    def __init__(self):
        self._group = state().world.objects
        self._first_tag = 1 + _KINDS * (next(_steps) % _TAG_STEPS)
        self._pending = []  # sends in flight with the buffers they send from

    def send(self, obj, dst, kind):
        tag = self._first_tag + kind
        sizes, payload = _encode(obj)
        self._pending.append((sizes, payload, dist.isend(sizes, dst=dst, group=self._group, tag=tag),
                              dist.isend(payload, dst=dst, group=self._group, tag=tag)))

    def recv(self, src, kind, device):
        tag = self._first_tag + kind
        sizes = torch.empty(2, dtype=torch.int64)
        dist.recv(sizes, src=src, group=self._group, tag=tag)
        header_size, total = sizes.tolist()
        payload = torch.empty(total, dtype=torch.uint8)
        dist.recv(payload, src=src, group=self._group, tag=tag)
        return _decode(payload, header_size, device)

    def finish(self):
        """Wait until every send of this step left."""
        for _, _, sizes_sent, payload_sent in self._pending:
            sizes_sent.wait()
            payload_sent.wait()
        self._pending.clear()


def _encode(obj):
    """(int64 [header bytes, buffer bytes], the uint8 buffer) of `obj`."""
    header, tensors = io.BytesIO(), []
    _HeaderPickler(header, tensors).dump(obj)
    header = header.getbuffer()
    offsets, end = [], _aligned(len(header))
    for tensor in tensors:
        offsets.append(end)
        end = _aligned(end + tensor.numel() * tensor.element_size())
    payload = torch.empty(end, dtype=torch.uint8)
    payload[:len(header)] = torch.frombuffer(header, dtype=torch.uint8)
    for tensor, offset in zip(tensors, offsets, strict=True):
        _view(payload, offset, tensor.dtype, tensor.shape).copy_(tensor)
    return torch.tensor([len(header), end], dtype=torch.int64), payload


def _decode(payload, header_size, device):
    header = io.BytesIO(payload[:header_size].numpy().tobytes())
    return _HeaderUnpickler(header, payload, _aligned(header_size), device).load()


class _HeaderPickler(pickle.Pickler):
    """Pickles a message with each dense tensor replaced by its (dtype, shape), collected in
    `tensors` in order: their bytes follow the header."""

    def __init__(self, file, tensors):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._tensors = tensors

    def persistent_id(self, obj):
        if not (isinstance(obj, torch.Tensor) and obj.layout == torch.strided and not obj.is_quantized):
            return None
        self._tensors.append(obj.detach())
        return obj.dtype, tuple(obj.shape)


class _HeaderUnpickler(pickle.Unpickler):
    """Rebuilds each tensor from the bytes after the header, in order, copied onto `device`."""

    def __init__(self, file, payload, offset, device):
        super().__init__(file)
        self._payload, self._offset, self._device = payload, offset, device

    def persistent_load(self, pid):
        dtype, shape = pid
        view = _view(self._payload, self._offset, dtype, shape)
        self._offset = _aligned(self._offset + view.numel() * view.element_size())
        return view.to(self._device, copy=True)  # owns its memory: the buffer can go


def _view(payload, offset, dtype, shape):
    size = torch.Size(shape).numel() * dtype.itemsize
    return payload[offset:offset + size].view(dtype).view(shape)


def _aligned(size):
    return -(-size // _ALIGN) * _ALIGN
