"""smp.init() and the process-wide state it sets up: ranks, groups and parameters."""

import atexit
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from ..common.layout import all_dp_groups, all_mp_groups, rank_layout
from ..common.state import CurrentState, ProcessState


@dataclass(frozen=True)
class Groups:
    """One process group for a set of ranks: `collective` on the job's backend (tensors), and
    `objects` on gloo (pickled objects, barriers), the same group when the backend is gloo."""

    ranks: tuple
    collective: object
    objects: object


@dataclass(frozen=True)
class State(ProcessState):
    world: Groups
    mp: Groups
    dp: Groups
    device: torch.device


def _build(params, env):
    """Join the job's process group and create its MP and DP groups."""
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cuda", env.local_rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        _init_process_group(backend, env)
    return _build_state(params, env, device)


current = CurrentState(_build)
init, state, is_initialized = current.init, current.get, current.is_initialized


def _init_process_group(backend, env):
    timeout = timedelta(minutes=30)
    if env.launcher == "none":
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        return
    dist.init_process_group(
        backend, init_method=env.init_method, rank=env.rank, world_size=env.world_size, timeout=timeout
    )
    atexit.register(_leave_process_group)


def _leave_process_group():
    """Close the job's process groups before the interpreter tears their objects down in no set
    order: a rank whose peers on another host had already exited then aborted in gloo's teardown
    (SIGABRT, the job failed after training had finished)."""
    if dist.is_initialized():
        dist.destroy_process_group()


def _build_state(params, env, device):
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    layout = rank_layout(rank, world_size, params.partitions, params.placement_strategy)
    gloo_world = None if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")
    world = Groups(tuple(range(world_size)), dist.group.WORLD, gloo_world or dist.group.WORLD)
    # new_group is collective: every rank creates every group, in the same order.
    mp = _create_groups(all_mp_groups(world_size, params.partitions, params.placement_strategy), rank)
    dp = _create_groups(all_dp_groups(world_size, params.partitions, params.placement_strategy), rank)
    return State(
        config=params, rank=rank, world_size=world_size, local_rank=env.local_rank,
        local_size=env.local_size, mp_rank=layout.mp_rank, dp_rank=layout.dp_rank,
        world=world, mp=mp, dp=dp, device=device,
    )


def _create_groups(rank_sets, rank):
    mine = None
    separate_gloo = dist.get_backend() != "gloo"
    for ranks in rank_sets:
        collective = dist.new_group(list(ranks))
        objects = dist.new_group(list(ranks), backend="gloo") if separate_gloo else collective
        if rank in ranks:
            mine = Groups(ranks, collective, objects)
    return mine
