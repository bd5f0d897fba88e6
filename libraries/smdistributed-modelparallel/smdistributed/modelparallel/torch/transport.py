"""Activations, gradients and model outputs between the stages of an MP group.

A message is any structure of tensors and Python values, sent as one byte buffer whose first
64 KiB travel as one gloo message and the rest, if any, as a second (the receiver learns the
whole size from the first: a message of a small model, an activation or an output, then costs
one gloo message instead of two, the cost that pipelining small models on CPUs is most
sensitive to), with a tag per kind of message and per step, so that the kinds travel
independently between the same two ranks, never mix with the smp.send / smp.recv_from messages
of user code (tag 0), and a step that failed part-way (its step function raised on every rank)
leaves no message that a later step would take for its own. Sends do not wait for the receiver
(they are waited for when the step ends), so that no stage waits on a stage that waits on it:
the schedules' receives alone order the pipeline.

The buffer is two int64 (the header's and the message's byte counts), the message pickled with
each dense tensor replaced by its dtype and shape (a header of some bytes), then the tensors' raw
bytes, each at an aligned offset: a tensor is copied
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
_PREFIX = 16  # the two int64 byte counts at the start of a buffer
_FIRST = 64 << 10  # bytes of a message's first gloo message, the whole of a smaller message
_steps = itertools.count()  # this process's pipelined steps; every rank of a job runs the same ones


class Transport:
    """The messages of one pipelined step."""

    def __init__(self):
        self._group = state().world.objects
        self._first_tag = 1 + _KINDS * (next(_steps) % _TAG_STEPS)
        self._pending = []  # sends in flight with the buffers they send from

    def send(self, obj, dst, kind):
        # the process group's own calls: torch.distributed's wrappers around them cost more than
        # a small message's copy, and every argument is already checked here
        tag, peer, payload = self._first_tag + kind, self._group_rank(dst), _encode(obj)
        works = [self._group.send([payload[:_FIRST]], peer, tag)]
        if payload.numel() > _FIRST:
            works.append(self._group.send([payload[_FIRST:]], peer, tag))
        self._pending.append((payload, works))

    def recv(self, src, kind, device):
        tag, peer = self._first_tag + kind, self._group_rank(src)
        first = torch.empty(_FIRST, dtype=torch.uint8)
        self._group.recv([first], peer, tag).wait()
        _, total = message_sizes(first)
        payload = first
        if total > _FIRST:
            payload = torch.empty(total, dtype=torch.uint8)
            payload[:_FIRST] = first
            self._group.recv([payload[_FIRST:]], peer, tag).wait()
        return _decode(payload, device)

    def finish(self):
        """Wait until every send of this step left."""
        for _, works in self._pending:
            for work in works:
                work.wait()
        self._pending.clear()

    def _group_rank(self, rank):
        return dist.get_group_rank(self._group, rank)


def _encode(obj):
    """The uint8 buffer of `obj`: its message bytes, padded to at least _FIRST bytes."""
    header, tensors = io.BytesIO(), []
    _HeaderPickler(header, tensors).dump(obj)
    header = header.getbuffer()
    offsets, end = [], _aligned(_PREFIX + len(header))
    for tensor in tensors:
        offsets.append(end)
        end = _aligned(end + tensor.numel() * tensor.element_size())
    payload = torch.empty(max(end, _FIRST), dtype=torch.uint8)
    payload[:_PREFIX].view(torch.int64).copy_(torch.tensor([len(header), end], dtype=torch.int64))
    payload[_PREFIX:_PREFIX + len(header)] = torch.frombuffer(header, dtype=torch.uint8)
    for tensor, offset in zip(tensors, offsets, strict=True):
        _view(payload, offset, tensor.dtype, tensor.shape).copy_(tensor)
    return payload


def _decode(payload, device):
    header_size, _ = message_sizes(payload)
    header = io.BytesIO(payload[_PREFIX:_PREFIX + header_size].numpy().tobytes())
    return _HeaderUnpickler(header, payload, _aligned(_PREFIX + header_size), device).load()


def message_sizes(payload):
    """(header bytes, message bytes) that a buffer of _encode starts with."""
    return tuple(payload[:_PREFIX].view(torch.int64).tolist())


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
