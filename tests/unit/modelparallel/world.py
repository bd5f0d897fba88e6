"""A world of spawned processes that run the functions of scenarios.py together, rank by rank.

Each rank is started the way its launcher starts one (see scenarios.serve), calls smp.init()
once, then runs the scenarios it is sent. A scenario's exception on any rank fails the test with that rank's
traceback; a scenario that does not finish in time fails it and stops the world.
"""

import json
import multiprocessing
import queue
import socket
import time

from . import scenarios

SCENARIO_TIMEOUT = 120.0  # includes a new world starting its ranks on a busy 2-core machine


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class World:
    def __init__(self, size, mp_parameters, launcher="torchrun"):
        context = multiprocessing.get_context("spawn")
        self.size = size
        self._results = context.Queue()
        self._commands = [context.Queue() for _ in range(size)]
        port = free_port()
        self._processes = [
            context.Process(
                target=scenarios.serve,
                args=(rank, size, port, launcher, json.dumps(mp_parameters), self._commands[rank],
                      self._results),
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
        deadline = time.monotonic() + SCENARIO_TIMEOUT
        while len(results) < self.size:
            if time.monotonic() > deadline:
                self._stop(f"{scenario} did not finish within {SCENARIO_TIMEOUT:.0f} s")
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
        for process, commands in zip(self._processes, self._commands, strict=True):
            if process.is_alive():
                commands.put(None)
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()  # one of this world's own ranks, stuck in a collective
                process.join(timeout=5)
