"""The communication API over the job's TCP transport (common/transport.py): CommGroup, RankType
and synchronous object primitives, with the torch variant's semantics.

send and broadcast pickle the object and return only after every destination's recv_from
unpickled it (the receiver acknowledges every message on a channel of its own); recv_from pairs
with either. allgather and barrier run over the group's own channel; every member calls them in
the same order, as with any collective. `allreduce_mean` (internal) averages numpy arrays over a
group in group-rank order, the same sum on every member.
"""

import pickle

from ..common.groups import DP_GROUP, MP_GROUP, WORLD, CommGroup, RankType, group_of, peer_global_rank
from .state import state

__all__ = ["DP_GROUP", "MP_GROUP", "WORLD", "CommGroup", "RankType", "allgather", "allreduce_mean", "barrier",
           "broadcast", "dp_barrier", "mp_barrier", "recv_from", "send"]

_OBJECT = "object"
_ACK = "ack"


def send(obj, dest_rank, rank_type):
    """Send a picklable object; returns once the destination's matching recv_from received it."""
    _send_to([peer_global_rank(state(), dest_rank, rank_type)], obj)


def recv_from(src_rank, rank_type):
    """Receive the object that a matching send or broadcast from `src_rank` sent."""
    current = state()
    src = peer_global_rank(current, src_rank, rank_type)
    obj = pickle.loads(current.transport.receive(src, _OBJECT))
    current.transport.send(src, _ACK, True)
    return obj


def broadcast(obj, group):
    """Send a picklable object to every other process of `group`; each must call recv_from.

    Returns once all of them received it.
    """
    current = state()
    _send_to([r for r in group_of(current, group).ranks if r != current.rank], obj)


def allgather(obj, group):
    """Every member's object, as a list indexed by rank within `group`."""
    current = state()
    members = group_of(current, group)
    peers = [r for r in members.ranks if r != current.rank]
    received = dict(zip(peers, current.transport.exchange(peers, members.channel, pickle.dumps(obj)),
                        strict=True))
    return [obj if r == current.rank else pickle.loads(received[r]) for r in members.ranks]


def barrier(group=CommGroup.WORLD):
    """Wait until every process of `group` reaches its barrier."""
    allgather(None, group)


def dp_barrier():
    barrier(CommGroup.DP_GROUP)


def mp_barrier():
    barrier(CommGroup.MP_GROUP)


def allreduce_mean(array, group):
    """The mean of a numpy array over `group`, summed in group-rank order on every member, so that
    every member gets bit-identical values."""
    arrays = allgather(array, group)
    total = arrays[0].copy()
    for other in arrays[1:]:
        total += other
    return total / len(arrays) if len(arrays) > 1 else total


def _send_to(destinations, obj):
    transport = state().transport
    payload = pickle.dumps(obj)
    for dst in destinations:
        transport.send(dst, _OBJECT, payload)
    for dst in destinations:
        transport.receive(dst, _ACK)
