"""Pipeline parallelism on the CPU: per-rank parameter bytes and step time for P = 1, 2, 4 against
single-process training of the same model on the same global batch, measured in one run.

Each configuration is a world of P gloo processes on 127.0.0.1 (one replica: partitions = P,
world size P), started as torchrun starts ranks, running Sageport's smdistributed.modelparallel
(libraries/smdistributed-modelparallel, imported from the tree) with --microbatches microbatches
and each pipeline schedule in --pipelines. The floor is one process training the same
nn.Sequential (--depth Linear+ReLU layers of --width, then a Linear to 1) with plain torch on the
whole batch. Every process uses one thread (torch.set_num_threads(1)), the floor too. A rank's
parameter bytes are those of `model.local_parameters()`; the largest over the ranks is reported.
The step time is rank 0's median over --steps steps (zero_grad, smp.step forward+backward,
optimizer.step), each between two barriers, after --warmup steps. Each line also gives the
median CPU time of a step (time.process_time: every thread of the process) of the busiest rank
against the floor's: the ratio that wall time reaches when every rank has a core of its own,
which a shared machine's wall time does not show (P processes on the 2 cores of a loaded
machine wait for each other's time slices). The floor process also times plain torch's gradient
accumulation over the same --microbatches microbatches (a backward pass each): on the CPU,
microbatches of a small model cost more than the whole batch (each backward pass writes and
accumulates every weight gradient), and the pipeline cannot do with less.

Prints one line per configuration and a summary line, with the issue's goals: parameters per rank
<= 1.1/P of the model, and the interleaved step at P = 2 <= 1.3x single-process.

    make bench-modelparallel [ARGS='--width 512 --steps 20']

or `.venv/bin/python -m bench.modelparallel` from the repository root. Needs torch; no stack.

On a machine with NVIDIA GPUs, `--device cuda` runs the same comparison with NCCL, one process per
GPU (worlds larger than the GPU count are skipped: NCCL refuses two ranks on one GPU), the floor
on GPU 0 and every step's time taken after `torch.cuda.synchronize()`. The CPU comparison on such
a machine needs `CUDA_VISIBLE_DEVICES=` (the library picks NCCL whenever torch sees a GPU).
"""

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import torch

LIBRARY = Path(__file__).resolve().parents[1] / "libraries" / "smdistributed-modelparallel"
PARAMETER_GOAL = 1.1  # parameters per rank <= 1.1 / P of the model
STEP_GOAL = 1.3  # interleaved step time at P = 2 <= 1.3x single-process


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1,2,4", help="values of P (default 1,2,4)")
    parser.add_argument("--pipelines", default="interleaved,simple", help="schedules (default both)")
    parser.add_argument("--width", type=int, default=512)
    # 9: the first layer (16 inputs) is small, so 8 equal layers remain, which whole layers can
    # split into 2 or 4 equal partitions (with 7 the best split at P = 2 holds 4/7 of the model)
    parser.add_argument("--depth", type=int, default=9, help="hidden Linear layers (default 9)")
    parser.add_argument("--batch", type=int, default=64, help="global batch (default 64)")
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cpu: gloo, one thread a process; cuda: NCCL, one process per GPU")
    return parser.parse_args()


def make_model(width, depth):
    torch.manual_seed(0)
    layers = []
    for index in range(depth):
        layers += [torch.nn.Linear(width if index else 16, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))


def make_batch(batch):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(batch, 16, generator=generator), torch.randn(batch, 1, generator=generator)


def parameter_bytes(parameters):
    return sum(p.numel() * p.element_size() for p in parameters)


def single_process(options, results):
    torch.set_num_threads(1)
    device = torch.device(options["device"])
    model = make_model(options["width"], options["depth"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs, targets = (t.to(device) for t in make_batch(options["batch"]))
    microbatches = options["microbatches"]

    def whole_batch():
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()

    def accumulated():
        optimizer.zero_grad()
        for x, y in zip(inputs.chunk(microbatches), targets.chunk(microbatches), strict=True):
            (torch.nn.functional.mse_loss(model(x), y) / microbatches).backward()
        optimizer.step()

    seconds, cpu = timed(whole_batch, options)
    accumulated_seconds, accumulated_cpu = timed(accumulated, options)
    results.put({"bytes": parameter_bytes(model.parameters()), "seconds": seconds, "cpu": cpu,
                 "accumulated_seconds": accumulated_seconds, "accumulated_cpu": accumulated_cpu})


def pipeline_rank(rank, size, port, options, results):
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(size),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
        SM_HP_MP_PARAMETERS=json.dumps({"partitions": size, "microbatches": options["microbatches"],
                                        "pipeline": options["pipeline"], "ddp": True}),
    )
    torch.set_num_threads(1)
    import smdistributed.modelparallel.torch as smp

    smp.init()
    model = smp.DistributedModel(make_model(options["width"], options["depth"]))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1e-3))
    device = torch.device("cuda", smp.local_rank()) if options["device"] == "cuda" else torch.device("cpu")
    inputs, targets = (t.to(device) for t in make_batch(options["batch"]))

    @smp.step
    def train_step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        model.backward(loss)
        return loss

    def one_step():
        optimizer.zero_grad()
        train_step(inputs, targets)
        optimizer.step()

    seconds, cpu = timed(one_step, options, smp.barrier)
    results.put({"rank": rank, "bytes": parameter_bytes(model.local_parameters()), "seconds": seconds,
                 "cpu": cpu})
    smp.barrier()


def timed(one_step, options, barrier=lambda: None):
    """The medians of the steps' wall times (each between two barriers in a world) and of their
    CPU times: on a shared machine a burst of other load then moves a few steps, not the result."""
    for _ in range(options["warmup"]):
        one_step()
    seconds, cpu = [], []
    for _ in range(options["steps"]):
        barrier()
        started, cpu_started = time.perf_counter(), time.process_time()
        one_step()
        if options["device"] == "cuda":
            torch.cuda.synchronize()  # the step's kernels, not just their launches
        cpu.append(time.process_time() - cpu_started)  # the barrier's wait is no step work
        barrier()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), statistics.median(cpu)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_world(size, options):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [context.Process(target=pipeline_rank, args=(rank, size, port, options, results))
                 for rank in range(size)]
    for process in processes:
        process.start()
    reports = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    if any(process.exitcode != 0 for process in processes):
        codes = [p.exitcode for p in processes]
        raise RuntimeError(f"a rank of the world of {size} failed: exit codes {codes}")
    return {"bytes": max(r["bytes"] for r in reports),
            "seconds": next(r["seconds"] for r in reports if r["rank"] == 0),
            "cpu": max(r["cpu"] for r in reports)}


def run_single(options):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=single_process, args=(options, results))
    process.start()
    report = results.get(timeout=600)
    process.join(timeout=60)
    return report


def main():
    args = arguments()
    sys.path.insert(0, str(LIBRARY))  # spawned ranks inherit it
    options = {key: getattr(args, key)
               for key in ("width", "depth", "batch", "microbatches", "steps", "warmup", "device")}
    verdicts = []
    for size in (int(p) for p in args.partitions.split(",")):
        if args.device == "cuda" and size > torch.cuda.device_count():
            print(f"P={size}: skipped, {torch.cuda.device_count()} GPU(s) here", flush=True)
            continue
        for pipeline in args.pipelines.split(",") if size > 1 else ["interleaved"]:
            # the floor again right before each world: on a shared machine the load moves
            floor = run_single(options)
            measured = run_world(size, {**options, "pipeline": pipeline})
            verdicts += report(size, pipeline, measured, floor)
    print(f"summary: {sum(verdicts)} of {len(verdicts)} goals met")


def report(size, pipeline, measured, floor):
    """Print one configuration's ratios; whether each of its goals was met."""
    byte_ratio = measured["bytes"] / floor["bytes"]
    step_ratio = measured["seconds"] / floor["seconds"]
    verdicts = [byte_ratio <= PARAMETER_GOAL / size]
    line = (f"P={size} {pipeline}: parameters per rank {byte_ratio:.3f}x the model's "
            f"{floor['bytes'] / 2**20:.1f} MiB (goal <= {PARAMETER_GOAL / size:.3f}: "
            f"{_verdict(verdicts[0])}), "
            f"step {step_ratio:.2f}x single-process ({measured['seconds'] * 1000:.1f} ms against "
            f"{floor['seconds'] * 1000:.1f} ms); CPU of the busiest rank "
            f"{measured['cpu'] / floor['cpu']:.2f}x ({measured['cpu'] * 1000:.1f} ms against "
            f"{floor['cpu'] * 1000:.1f} ms); wall {measured['seconds'] / floor['accumulated_seconds']:.2f}x, "
            f"CPU {measured['cpu'] / floor['accumulated_cpu']:.2f}x plain gradient accumulation over the "
            f"microbatches ({floor['accumulated_seconds'] * 1000:.1f} ms, "
            f"{floor['accumulated_cpu'] * 1000:.1f} ms CPU)")
    if size == 2 and pipeline == "interleaved":
        verdicts.append(step_ratio <= STEP_GOAL)
        line += f" (goal <= {STEP_GOAL}: {_verdict(verdicts[1])})"
    print(line, flush=True)
    return verdicts


def _verdict(met):
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main()
