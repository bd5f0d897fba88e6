"""The communication API: CommGroup, RankType and synchronous object primitives.

Objects travel pickled over gloo (on the CPU, whatever the job's backend), as one message of
two parts: the payload length (int64), then the payload (uint8). The receiver answers every
message with a one-element acknowledgement once it unpickled the object, and send/broadcast
return only when every destination's acknowledgement arrived: they are synchronous whatever the
transport does with a send whose receiver is not there yet, and they return after the object
was received, not merely after the receive was posted. broadcast sends the same message as
send, so a receiver pairs recv_from with either.
"""

import enum
import pickle

import torch
import torch.distributed as dist

from .state import state


class CommGroup(enum.Enum):
    WORLD = 0
    MP_GROUP = 1
    DP_GROUP = 2
    # SageMaker's names without tensor parallelism: the pipeline group is the MP group, the
    # reduced-data-parallel group the DP group (enum aliases: the same members)
    PP_GROUP = 1
    RDP_GROUP = 2


class RankType(enum.Enum):
    WORLD_RANK = 0
    MP_RANK = 1
    DP_RANK = 2
    PP_RANK = 1
    RDP_RANK = 2


WORLD = CommGroup.WORLD
MP_GROUP = CommGroup.MP_GROUP
DP_GROUP = CommGroup.DP_GROUP

_GROUP_OF_RANK_TYPE = {RankType.WORLD_RANK: CommGroup.WORLD, RankType.MP_RANK: CommGroup.MP_GROUP,
                       RankType.DP_RANK: CommGroup.DP_GROUP}


def groups_of(group):
    """The state's Groups for a CommGroup."""
    if not isinstance(group, CommGroup):
        raise TypeError(f"group must be an smp.CommGroup (WORLD, MP_GROUP or DP_GROUP), got {group!r}")
    current = state()
    return {CommGroup.WORLD: current.world, CommGroup.MP_GROUP: current.mp,
            CommGroup.DP_GROUP: current.dp}[group]


def global_rank(peer_rank, rank_type):
    """The global rank of the process that is `peer_rank` in this process's own `rank_type` group."""
    if not isinstance(rank_type, RankType):
        raise TypeError(f"rank_type must be an smp.RankType (WORLD_RANK, MP_RANK or DP_RANK), "
                        f"got {rank_type!r}")
    ranks = groups_of(_GROUP_OF_RANK_TYPE[rank_type]).ranks
    if isinstance(peer_rank, bool) or not isinstance(peer_rank, int) or not 0 <= peer_rank < len(ranks):
        raise ValueError(f"rank {peer_rank!r} does not exist for {rank_type.name}: "
                         f"valid ranks are 0..{len(ranks) - 1}")
    peer = ranks[peer_rank]
    if peer == state().rank:
        raise ValueError(f"{rank_type.name} {peer_rank} is this process itself")
    return peer


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
