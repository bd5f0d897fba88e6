"""Ranks and sizes of this process (smp.rank(), smp.mp_rank(), ...)."""

from .state import state


def rank():
    return state().rank


def size():
    return state().world_size


def mp_rank():
    return state().mp_rank


def mp_size():
    return len(state().mp.ranks)


def dp_rank():
    return state().dp_rank


def dp_size():
    return len(state().dp.ranks)


def local_rank():
    return state().local_rank


def local_size():
    return state().local_size


def get_mp_group():
    """The global ranks of this process's MP group, in mp_rank order."""
    return list(state().mp.ranks)


def get_dp_group():
    """The global ranks of this process's DP group, in dp_rank order."""
    return list(state().dp.ranks)
