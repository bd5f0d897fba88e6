"""Runs a training script written for GPUs, unchanged, on the CPU: `python cuda_on_cpu.py
SCRIPT ARGS...`.

AWS's smp v1 MNIST example refuses to start without CUDA (`torch.cuda.is_available()`), calls
`torch.cuda.set_device(smp.local_rank())` and moves its batches to `torch.device("cuda")`. For
the script's own calls only (code whose module is __main__), CUDA is reported available,
set_device does nothing and a move to "cuda" stays on the CPU; torch and the library still see
that there is no GPU, so the job runs on gloo. torchnet, which the script imports for
SplitDataset, imports visdom at the top of its logger package; a stub visdom stands in for it.
"""

import functools
import runpy
import sys
import types

import torch


def _from_script():
    return sys._getframe(2).f_globals.get("__name__") == "__main__"


def _script_sees(real, value):
    @functools.wraps(real)
    def patched(*args, **kwargs):
        return value if _from_script() else real(*args, **kwargs)

    return patched


def _cuda_to_cpu(argument):
    if isinstance(argument, torch.device) and argument.type == "cuda":
        return torch.device("cpu")
    if isinstance(argument, str) and argument.startswith("cuda"):
        return "cpu"
    return argument


def _to(real):
    @functools.wraps(real)
    def to(self, *args, **kwargs):
        args = tuple(_cuda_to_cpu(a) for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cuda_to_cpu(kwargs["device"])
        return real(self, *args, **kwargs)

    return to


def main():
    torch.cuda.is_available = _script_sees(torch.cuda.is_available, True)
    torch.cuda.set_device = _script_sees(torch.cuda.set_device, None)
    torch.Tensor.to = _to(torch.Tensor.to)
    sys.modules.setdefault("visdom", types.ModuleType("visdom"))
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
