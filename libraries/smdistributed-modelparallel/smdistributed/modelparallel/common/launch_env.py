"""Where this process sits in the job, read from the launcher's environment.

torchrun (and Sageport's own launch) sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR and MASTER_PORT. mpirun (OpenMPI, as the SageMaker training toolkit runs it) sets
OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE but no rendezvous address; that is then
SMP_MASTER_ADDR, else MASTER_ADDR, else the first host of SM_HOSTS, else the first host of
/opt/ml/input/config/resourceconfig.json; the port is SMP_MASTER_PORT, else MASTER_PORT, else
DEFAULT_MASTER_PORT. With neither launcher the process is a world of one.
"""

import json
import os
from dataclasses import dataclass

DEFAULT_MASTER_PORT = 29761
RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
OMPI_VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_SIZE")


@dataclass(frozen=True)
class LaunchEnv:
    rank: int
    world_size: int
    local_rank: int
    local_size: int
    master_addr: str | None  # None: a world of one, no rendezvous needed
    master_port: int | None
    launcher: str  # "torchrun", "mpirun" or "none"

    @property
    def init_method(self):
        # Under torchrun, env:// also picks up the agent's own store when torchrun shares it.
        if self.launcher == "torchrun":
            return "env://"
        return f"tcp://{self.master_addr}:{self.master_port}"


def read_launch_env(environ=None, resource_config=RESOURCE_CONFIG):
    environ = os.environ if environ is None else environ
    if "RANK" in environ and "WORLD_SIZE" in environ:
        return _from_torchrun(environ)
    if "OMPI_COMM_WORLD_RANK" in environ:
        return _from_openmpi(environ, resource_config)
    return LaunchEnv(rank=0, world_size=1, local_rank=0, local_size=1, master_addr=None, master_port=None,
                     launcher="none")


def _from_torchrun(environ):
    missing = [name for name in TORCHRUN_VARS if name not in environ]
    if missing:
        raise RuntimeError(f"the launcher set RANK and WORLD_SIZE but not {', '.join(missing)}")
    return LaunchEnv(
        rank=_int(environ, "RANK"),
        world_size=_int(environ, "WORLD_SIZE"),
        local_rank=_int(environ, "LOCAL_RANK"),
        local_size=_int(environ, "LOCAL_WORLD_SIZE"),
        master_addr=environ["MASTER_ADDR"],
        master_port=_int(environ, "MASTER_PORT"),
        launcher="torchrun",
    )


def _from_openmpi(environ, resource_config):
    missing = [name for name in OMPI_VARS if name not in environ]
    if missing:
        raise RuntimeError(f"mpirun set OMPI_COMM_WORLD_RANK but not {', '.join(missing)}")
    port_var = next((name for name in ("SMP_MASTER_PORT", "MASTER_PORT") if environ.get(name)), None)
    return LaunchEnv(
        rank=_int(environ, "OMPI_COMM_WORLD_RANK"),
        world_size=_int(environ, "OMPI_COMM_WORLD_SIZE"),
        local_rank=_int(environ, "OMPI_COMM_WORLD_LOCAL_RANK"),
        local_size=_int(environ, "OMPI_COMM_WORLD_LOCAL_SIZE"),
        master_addr=_master_addr(environ, resource_config),
        master_port=_int(environ, port_var) if port_var else DEFAULT_MASTER_PORT,
        launcher="mpirun",
    )


def _master_addr(environ, resource_config):
    for name in ("SMP_MASTER_ADDR", "MASTER_ADDR"):
        if environ.get(name):
            return environ[name]
    if environ.get("SM_HOSTS"):
        hosts = json.loads(environ["SM_HOSTS"])
    else:
        try:
            with open(resource_config) as fh:
                hosts = json.load(fh).get("hosts") or []
        except OSError:
            hosts = []
    if not hosts:
        raise RuntimeError(
            "under mpirun the rendezvous address comes from SMP_MASTER_ADDR, MASTER_ADDR, SM_HOSTS "
            f"or {resource_config}; none is set"
        )
    return hosts[0]


def _int(environ, name):
    try:
        return int(environ[name])
    except ValueError:
        raise RuntimeError(f"{name} must be an integer, got {environ[name]!r}") from None
