"""The communication API: CommGroup, RankType and synchronous object primitives.

Objects travel pickled over gloo (on the CPU, whatever the job's backend), as one message of
two parts: the payload length (int64), then the payload (uint8). The receiver answers every
message with a one-element acknowledgement once it unpickled the object, and send/broadcast
return only when every destination's acknowledgement arrived: they are synchronous whatever the
transport does with a send whose receiver is not there yet, and they return after the object
was received, not merely after the receive was posted. broadcast sends the same message as
send, so a receiver pairs recv_from with either.
"""

import pickle

import torch
import torch.distributed as dist

from ..common.groups import DP_GROUP, MP_GROUP, WORLD, CommGroup, RankType, group_of, peer_global_rank
from .state import state

__all__ = ["DP_GROUP", "MP_GROUP", "WORLD", "CommGroup", "RankType", "allgather", "barrier", "broadcast",
           "dp_barrier", "global_rank", "groups_of", "mp_barrier", "recv_from", "send"]


def groups_of(group):
    """The state's Groups for a CommGroup."""
    return group_of(state(), group)


def global_rank(peer_rank, rank_type):
    """The global rank of the process that is `peer_rank` in this process's own `rank_type` group."""
    return peer_global_rank(state(), peer_rank, rank_type)


def send(obj, dest_rank, rank_type):
    """Send a picklable object; returns once the destination's matching recv_from received it."""
    _send_to([global_rank(dest_rank, rank_type)], obj)


def recv_from(src_rank, rank_type):
    """Receive the object that a matching send or broadcast from `src_rank` sent."""
    src = global_rank(src_rank, rank_type)
    objects = state().world.objects
    length = torch.empty(1, dtype=torch.int64)
    dist.recv(length, src=src, group=objects)
    payload = torch.empty(int(length.item()), dtype=torch.uint8)
    dist.recv(payload, src=src, group=objects)
    obj = pickle.loads(payload.numpy().tobytes())
    dist.send(torch.ones(1, dtype=torch.int64), dst=src, group=objects)
    return obj


def broadcast(obj, group):
    """Send a picklable object to every other process of `group`; each must call recv_from.

    Returns once all of them received it.
    """
    me = state().rank
    _send_to([r for r in groups_of(group).ranks if r != me], obj)


def allgather(obj, group):
    """Every member's object, as a list indexed by rank within `group`."""
    gathered = [None] * len(groups_of(group).ranks)
    dist.all_gather_object(gathered, obj, group=groups_of(group).objects)
    return gathered


def barrier(group=CommGroup.WORLD):
    """Wait until every process of `group` reaches its barrier."""
    dist.barrier(group=groups_of(group).objects)


def dp_barrier():
    barrier(CommGroup.DP_GROUP)


def mp_barrier():
    barrier(CommGroup.MP_GROUP)


def _send_to(destinations, obj):
    objects = state().world.objects
    payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    length = torch.tensor([payload.numel()], dtype=torch.int64)
    pending = []
    for dst in destinations:
        pending.append(dist.isend(length, dst=dst, group=objects))
        pending.append(dist.isend(payload, dst=dst, group=objects))
    acks = [torch.zeros(1, dtype=torch.int64) for _ in destinations]  # alive until the waits end
    for dst, ack in zip(destinations, acks, strict=True):
        pending.append(dist.irecv(ack, src=dst, group=objects))
    for request in pending:
        request.wait()
