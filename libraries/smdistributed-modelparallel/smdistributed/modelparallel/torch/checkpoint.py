"""smp.save / smp.load: torch.save and torch.load with SageMaker's `partial` files.

partial=True: each calling rank writes, and reads, its own file `f"{f}_{pp_rank}_{tp_rank}"`
(tp_rank is always 0 here: no tensor parallelism). The layout to load into must be the one that
saved. partial=False: one file `f`, written by the caller whose mp_rank is 0 (the others' calls
write nothing: the full objects, gathered by state_dict(), are the same on every MP rank) and
read by every caller. Saving is not collective; SageMaker's examples save on dp_rank 0 only and
call smp.barrier() before anyone loads.
"""

import os
import pickle

import torch

from .state import state

TP_RANK = 0


def partial_path(f):
    """The file of this rank's partition for the name `f`."""
    return f"{_path(f)}_{state().mp_rank}_{TP_RANK}"


def save(obj, f, partial=True, pickle_module=pickle, pickle_protocol=2):
    if partial:
        torch.save(obj, partial_path(f), pickle_module=pickle_module, pickle_protocol=pickle_protocol)
    elif state().mp_rank == 0:
        torch.save(obj, _path(f), pickle_module=pickle_module, pickle_protocol=pickle_protocol)


def load(f, map_location=None, pickle_module=None, partial=True, **pickle_load_args):
    path = partial_path(f) if partial else _path(f)
    if not os.path.exists(path):
        which = "this rank's partial checkpoint" if partial else "the full checkpoint"
        raise FileNotFoundError(f"{which} {path!r} does not exist (saved with partial={not partial}?)")
    if pickle_module is not None:
        pickle_load_args["pickle_module"] = pickle_module
    return torch.load(path, map_location=map_location, **pickle_load_args)


def _path(f):
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"smp.save and smp.load take a file name, got {type(f).__name__}")
    return os.fspath(f)
