"""What smp.init() reads and records the same way in every variant: the job's parameters and
this process's place in it. Each variant's state.py adds its groups and how its processes talk."""

from dataclasses import dataclass

from .config import load_config
from .launch_env import read_launch_env
from .layout import check_divisible

NOT_INITIALIZED = "smp.init() must be called before using the model-parallel library"


@dataclass(frozen=True)
class ProcessState:
    """The fields every variant's State starts with (its world, mp and dp groups follow)."""

    config: object
    rank: int
    world_size: int
    local_rank: int
    local_size: int
    mp_rank: int
    dp_rank: int


def read_job(config):
    """(the job's parameters, this process's launch environment), checked to fit each other.
    `config` (a dict) replaces SM_HP_MP_PARAMETERS when given."""
    params = load_config(config)
    env = read_launch_env()
    check_divisible(env.world_size, params.partitions)
    return params, env
