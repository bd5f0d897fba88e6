"""smp.init() and the process-wide state it sets up: ranks, groups, parameters and the transport."""

import atexit
from dataclasses import dataclass

from ..common.layout import rank_layout
from ..common.state import CurrentState, ProcessState
from ..common.transport import Transport

TIMEOUT = 30 * 60.0  # as torch.distributed's default: a peer may be busy for long in a large step


@dataclass(frozen=True)
class Group:
    """A set of processes: global ranks in group-rank order, and the transport channel of its
    collectives (distinct per group, so collectives of different groups never mix)."""

    ranks: tuple

    @property
    def channel(self):
        return ("group", self.ranks)


@dataclass(frozen=True)
class State(ProcessState):
    world: Group
    mp: Group
    dp: Group
    transport: Transport


def _build(params, env):
    """Connect to the job's other processes and compute the MP and DP groups."""
    layout = rank_layout(env.rank, env.world_size, params.partitions, params.placement_strategy)
    transport = Transport(env.rank, env.world_size, env.master_addr, _rendezvous_port(env), TIMEOUT)
    atexit.register(transport.close)
    return State(
        config=params, rank=env.rank, world_size=env.world_size, local_rank=env.local_rank,
        local_size=env.local_size, mp_rank=layout.mp_rank, dp_rank=layout.dp_rank,
        world=Group(tuple(range(env.world_size))), mp=Group(layout.mp_group), dp=Group(layout.dp_group),
        transport=transport,
    )


current = CurrentState(_build)
init, state, is_initialized = current.init, current.get, current.is_initialized


def _rendezvous_port(env):
    """Under torchrun its agent's own store listens on MASTER_PORT, so rank 0 listens on the next
    port; under mpirun the port is the one launch_env names (nothing else binds it)."""
    if env.launcher == "torchrun":
        return env.master_port + 1
    return env.master_port
