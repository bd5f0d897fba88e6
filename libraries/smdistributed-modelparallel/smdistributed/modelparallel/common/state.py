"""What smp.init() reads and records the same way in every variant: the job's parameters and
this process's place in it. Each variant's state.py adds its groups and how its processes talk."""

from dataclasses import dataclass

from .config import load_config
from .launch_env import read_launch_env
from .layout import check_divisible


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


class CurrentState:
    """The State smp.init() sets up in this process, once: `build(params, env)` is the variant's
    (connecting to the job's other processes, its groups); calling init() again changes nothing."""

    def __init__(self, build):
        self._build = build
        self.value = None

    def init(self, config=None):
        """Set up the model-parallel library for this process. `config` (a dict) replaces
        SM_HP_MP_PARAMETERS when given; calling init() again changes nothing."""
        if self.value is not None:
            return
        params = load_config(config)
        env = read_launch_env()
        check_divisible(env.world_size, params.partitions)
        self.value = self._build(params, env)

    def get(self):
        if self.value is None:
            raise RuntimeError("smp.init() must be called before using the model-parallel library")
        return self.value

    def is_initialized(self):
        return self.value is not None
