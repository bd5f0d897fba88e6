"""A world of spawned processes that run the functions of a scenarios module (scenarios.py for
the torch variant, tf_scenarios.py for the TensorFlow one) together, rank by rank.

Each rank is started the way its launcher starts one (see serve), calls the module's start()
(smp.init()) once, then runs the scenarios it is sent. A scenario's exception on any rank fails
the test with that rank's traceback; a scenario that does not finish in time fails it and stops
the world.

The torch ranks are forked from a fork server that imported the torch scenarios (torch and the
library) once for the session: on a busy 2-core machine importing torch takes seconds per
process, and a world of 8 paid that 8 times over. The ranks of another framework's world
(TensorFlow's) are forked from a spawned parent of their own that imported that framework once
(fork_ranks): one import per world instead of one per rank.
"""

import functools
import importlib
import json
import multiprocessing
import multiprocessing.connection
import os
import queue
import shutil
import signal
import tempfile
import time
import traceback

from devstack.stack import lasting_port

SCENARIO_TIMEOUT = 120.0  # includes a new world starting its ranks on a busy 2-core machine
CLOSE_TIMEOUT = 5.0  # for the ranks of a world told to stop, before they are killed
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "OMPI_COMM_WORLD_RANK", "SM_HOSTS", "SM_HP_MP_PARAMETERS")


def free_port():
    """The rendezvous port, bound by rank 0 later: below the ephemeral range, where no outgoing
    connection can take it meanwhile (devstack.stack.lasting_port)."""
    return lasting_port()


def _is_torch(scenarios_module):
    return scenarios_module == f"{__package__}.scenarios"


def _context(scenarios_module):
    """Fork-server ranks for the torch scenarios; a spawned parent forking the ranks for the
    others (TensorFlow's, fork_ranks), so that no rank holds both frameworks. Both parents import
    only, before any rank starts a thread or a process group, so forking them is safe."""
    if not _is_torch(scenarios_module):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # Read when the server starts (the first world). The server imports from the working
    # directory: run from the repository's root, else every rank imports for itself. torch's
    # optimizers import torch._dynamo at their first step: seconds more per rank, started here.
    context.set_forkserver_preload([f"{__package__}.library_path", "torch._dynamo", scenarios_module])
    return context


def serve(scenarios_module, rank, size, port, launcher, parameters_json, commands, results):
    """A rank: start as `launcher` starts one ("torchrun", "mpirun", or "none": the parameters go to
    smp.init()), import the scenarios module (only here, so that the test process never imports
    its framework), then run the scenarios sent until told to stop."""
    for name in LAUNCHER_VARS:
        os.environ.pop(name, None)
    if launcher == "torchrun":
        os.environ.update(
            RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(size),
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), SM_HP_MP_PARAMETERS=parameters_json,
        )
    elif launcher == "mpirun":  # the rendezvous comes from the job's hosts
        os.environ.update(
            OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(size),
            OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE=str(size),
            SM_HOSTS='["127.0.0.1"]', SMP_MASTER_PORT=str(port), SM_HP_MP_PARAMETERS=parameters_json,
        )
    scenarios = importlib.import_module(scenarios_module)
    scenarios.start(launcher, json.loads(parameters_json))
    lookup = getattr(scenarios, "scenario", None) or functools.partial(getattr, scenarios)
    while (command := commands.get()) is not None:
        name, args = command
        try:
            results.put((rank, True, lookup(name)(*args)))
        except BaseException:
            results.put((rank, False, traceback.format_exc()))
    results.close()
    results.join_thread()  # this rank's last results are in the pipe
    # Skip the interpreter's teardown, as forked ranks do: its exit handlers (the process groups'
    # destruction) wait for peers that the world stops one after another, seconds per rank.
    os._exit(0)


def fork_ranks(scenarios_module, size, port, launcher, parameters_json, commands, results, scratch):
    """The parent of a world's ranks (their process group's leader): imports the scenarios module
    (its framework) once, then forks every rank from itself. It ends with the first failing
    rank's exit code after killing the others (the world sees a rank die), or with 0 once every
    rank has stopped. The ranks' temporary files go to `scratch`, which the world removes:
    TensorFlow's autograph writes a module per traced function to the temporary directory and
    removes it at exit, which ranks that end with os._exit never reach."""
    os.setpgrp()  # World.close kills the whole group, ranks included
    os.environ["TMPDIR"] = tempfile.tempdir = scratch
    importlib.import_module(scenarios_module)
    fork = multiprocessing.get_context("fork")
    ranks = [
        fork.Process(target=serve, args=(scenarios_module, rank, size, port, launcher, parameters_json,
                                          commands[rank], results))
        for rank in range(size)
    ]
    for rank in ranks:
        rank.start()
    running = list(ranks)
    while running:
        multiprocessing.connection.wait([rank.sentinel for rank in running])
        for rank in [rank for rank in running if rank.exitcode is not None]:
            running.remove(rank)
            if rank.exitcode != 0:
                for other in running:
                    other.kill()
                # a signal's death as a shell reports it (a negative exit code is no exit status)
                os._exit(rank.exitcode if rank.exitcode > 0 else 128 - rank.exitcode)
    os._exit(0)


class World:
    def __init__(self, size, mp_parameters, launcher="torchrun", scenarios="scenarios",
                 scenario_timeout=SCENARIO_TIMEOUT):
        module = f"{__package__}.{scenarios}"
        context = _context(module)
        self.size = size
        self._timeout = scenario_timeout
        self._results = context.Queue()
        self._commands = [context.Queue() for _ in range(size)]
        port = free_port()
        self._forked_ranks = not _is_torch(module)
        self._scratch = tempfile.mkdtemp(prefix="smp-world-") if self._forked_ranks else None
        if self._forked_ranks:  # not a daemon: a daemon may not have children
            self._processes = [context.Process(
                target=fork_ranks,
                args=(module, size, port, launcher, json.dumps(mp_parameters), self._commands, self._results,
                      self._scratch),
            )]
        else:
            self._processes = [
                context.Process(
                    target=serve,
                    args=(module, rank, size, port, launcher, json.dumps(mp_parameters),
                          self._commands[rank], self._results),
                    daemon=True,
                )
                for rank in range(size)
            ]
        for process in self._processes:
            process.start()
        self._broken = None

    def run(self, scenario, *args):
        """The scenario's return value on every rank, by rank."""
        if self._broken:
            raise AssertionError(f"this world stopped after an earlier failure: {self._broken}")
        for commands in self._commands:
            commands.put((scenario, args))
        results = self._collect(scenario)
        failures = {rank: value for rank, (ok, value) in results.items() if not ok}
        if failures:
            raise AssertionError("\n".join(f"rank {rank}:\n{tb}" for rank, tb in sorted(failures.items())))
        return [results[rank][1] for rank in range(self.size)]

    def _collect(self, scenario):
        results = {}
        deadline = time.monotonic() + self._timeout
        while len(results) < self.size:
            if time.monotonic() > deadline:
                self._stop(f"{scenario} did not finish within {self._timeout:.0f} s")
            try:
                rank, ok, value = self._results.get(timeout=0.5)
            except queue.Empty:
                dead = [p.exitcode for p in self._processes if not p.is_alive()]
                if dead:
                    self._stop(f"a rank exited (exit codes {dead}) during {scenario}")
                continue
            results[rank] = (ok, value)
        return results

    def _stop(self, reason):
        self._broken = reason
        self.close()
        raise AssertionError(reason)

    def close(self):
        if any(process.is_alive() for process in self._processes):
            for commands in self._commands:
                commands.put(None)
        deadline = time.monotonic() + CLOSE_TIMEOUT  # one for the whole world: its ranks stop together
        for process in self._processes:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
        for process in self._processes:
            if process.is_alive():  # one of this world's own ranks, stuck in a collective
                if self._forked_ranks:
                    os.killpg(process.pid, signal.SIGKILL)  # the parent and its ranks (its group)
                else:
                    process.kill()
                process.join(timeout=5)
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
