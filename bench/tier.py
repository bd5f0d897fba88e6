"""Checkpoint write, read and resume: the RAM tier against S3 and local disk, in one run.

Each step is what PyTorch DCP does through AWS's `amzn-sagemaker-checkpointing`, with a process per
rank as HyperPod runs it (spawned, each with its own clients, the same processes for every path):
every rank writes its blob (--shard-mib random bytes) at once, then, once every rank succeeded,
rank 0 writes a small metadata shard; a read is rank 0 reading the metadata, then every rank its
blob. Each rank checks what it read against what it wrote, outside the timings. The same bytes go
to, and are read back from:
(a) the RAM tier: Sageport's tier service (`tier/`), one node started in a child process on
    127.0.0.1, its shards in a fresh directory under /dev/shm, driven by AWS's own
    `InMemoryCheckpointClient` (one per rank, as the DCP writer and reader use it); one node, so
    no replica is copied to a neighbour;
(b) S3: boto3 `put_object` / `get_object`, one request per shard (no multipart), in a bucket of
    the bench's own, a boto3 client per rank;
(c) local disk: a file per shard under --disk-dir, written and fsync'ed (the step's directory
    too), read back without dropping the page cache, so disk reads are optimistic (from memory).
Resume is what a restarted job's reader does: rank 0 finds the newest step (the tier's `latest`; an
S3 listing of the bucket), then the step is read as above, with the clients already created. Every
step runs each path once, in the order above; the medians and their ratios are printed, then one
summary line. Bounded: at most --repeat steps, and no step starts after --max-seconds. The tier's
directory, the bucket with its objects and the disk files are removed at the end.

    make bench-tier [ARGS='--shard-mib 256 --ranks 2 --repeat 3']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.tier [--shard-mib 256] [--ranks 2] [--repeat 3]

Run it as a module from the repository root (as a script, bench/tier.py would shadow the `tier`
package). S3 is found through the standard variables (AWS_ENDPOINT_URL_S3, the access key,
AWS_DEFAULT_REGION), or at --s3-endpoint-url.
"""

import argparse
import multiprocessing
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import boto3
from amzn_sagemaker_checkpointing.config.in_memory_client import InMemoryClientConfig
from amzn_sagemaker_checkpointing.storage.clients.inmemory.inmemory_client import InMemoryCheckpointClient

from bench.common import delete_bucket

LOOPBACK = "127.0.0.1"
ACCOUNT = "123456789012"
JOB = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/tier-bench"
MIB = 1024 * 1024
METADATA_BYTES = 64 * 1024  # DCP's .metadata: a pickled plan, small next to the shards
STEPS_RETAINED = 3  # the library's default; the tier keeps that many complete steps
START_SECONDS = 30.0
TIER = "RAM tier"
S3 = "S3"
DISK = "local disk"
RANK, METADATA = "rank", "metadata"  # a rank's part of a step
OPERATION_SECONDS = 300.0  # one rank's put, get or listing; longer is a failure


def main() -> int:
    if not __package__:
        sys.exit("run it from the repository root as: .venv/bin/python -m bench.tier")
    options = _arguments()
    shard_bytes = options.shard_mib * MIB
    step_bytes = options.ranks * shard_bytes + METADATA_BYTES
    s3 = boto3.client("s3", endpoint_url=options.s3_endpoint_url)
    bucket = f"tier-bench-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    try:
        with _tier_service(step_bytes) as url, tempfile.TemporaryDirectory(dir=options.disk_dir) as disk:
            places = {TIER: url, S3: (options.s3_endpoint_url, bucket), DISK: disk}
            ranks = Ranks(options.ranks, shard_bytes, places)
            try:
                seconds = _measure(ranks, Path(disk), options)
            finally:
                ranks.close()
    finally:
        delete_bucket(s3, bucket)
    print(f"{options.ranks} ranks x {options.shard_mib} MiB + {METADATA_BYTES // 1024} KiB metadata a step, "
          f"a process per rank, steps measured: {len(seconds[TIER, 'write'])}")
    print(f"S3 {s3.meta.endpoint_url} (put_object/get_object); disk {options.disk_dir} (write + fsync; "
          "reads from the page cache)")
    print(_report(summarize(seconds, step_bytes)))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard-mib", type=int, default=256, help="MiB per rank and step (default 256)")
    parser.add_argument("--ranks", type=int, default=2, help="data ranks (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="steps, each path once per step (default 3)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="no step starts after this many seconds (default 600)")
    parser.add_argument("--disk-dir", default="/var/tmp",
                        help="a directory on the data disk, not tmpfs (default /var/tmp)")
    parser.add_argument("--s3-endpoint-url", default=None, help="default: the standard variables")
    options = parser.parse_args()
    if options.shard_mib < 1 or options.ranks < 1 or options.repeat < 1:
        parser.error("--shard-mib, --ranks and --repeat must be at least 1")
    return options


# --- the tier service, in a child process -----------------------------------------------------

def _bench_job(address: str) -> str | None:
    """Who calls the tier: the bench, on loopback, is one training job of one account."""
    return JOB if address == LOOPBACK else None


def _job_running(job_arn: str) -> bool:
    return True  # the bench's namespace never expires while it runs


def _serve_tier(root: str, config_path: str, port_sender, stop) -> None:
    # Imported here, in the child only: the parent never needs the tier package.
    from tier.node import NodeSettings, TierNode

    node = TierNode(NodeSettings(
        node="bench", listen=(LOOPBACK, 0), peer_listen=(LOOPBACK, 0), root=Path(root),
        config_path=Path(config_path), token=secrets.token_hex(16), job_of=_bench_job,
        job_running=_job_running,
    ))
    node.start()
    port_sender.send(node.ports[0])
    stop.wait()
    node.stop(timeout=10)


@contextmanager
def _tier_service(step_bytes: int):
    """A tier node whose budget holds the retained steps and two more; yields its URL."""
    budget = (STEPS_RETAINED + 2) * step_bytes
    if shutil.disk_usage("/dev/shm").free < budget:
        sys.exit(f"/dev/shm has less than the {budget // MIB} MiB the tier needs; lower --shard-mib")
    base = Path(tempfile.mkdtemp(prefix="tier-bench-", dir="/dev/shm"))
    (base / "config.json").write_text(f'{{"budget_bytes": {budget}, "grace_seconds": 3600, "peers": []}}')
    spawn = multiprocessing.get_context("spawn")
    port_receiver, port_sender = spawn.Pipe(duplex=False)
    stop = spawn.Event()
    process = spawn.Process(target=_serve_tier, args=(str(base / "root"), str(base / "config.json"),
                                                      port_sender, stop), daemon=True)
    process.start()
    try:
        if not port_receiver.poll(START_SECONDS):
            raise RuntimeError(f"the tier service did not start within {START_SECONDS:.0f} s")
        yield f"http://{LOOPBACK}:{port_receiver.recv()}"
    finally:
        stop.set()
        process.join(START_SECONDS)
        if process.is_alive():
            process.terminate()
            process.join()
        shutil.rmtree(base)


# --- the three paths, as one rank's process sees them: put(step, data, part), get(step, part), latest()
# `part` is "rank" (this rank's shard) or "metadata" (rank 0 only, once every rank's shard landed)

class TierPath:
    name = TIER

    def __init__(self, url: str, namespace: str, rank: int, ranks: int):
        # the rank's own client, as each process of a DCP job has its own
        config = InMemoryClientConfig(base_url=url)
        self._client = InMemoryCheckpointClient(namespace, rank=rank, world_size=ranks, config=config)
        self._client.get_or_create_namespace()

    def put(self, step: int, data: bytes, part: str) -> None:
        self._client.put_checkpoint(step, data, metadata_index=0 if part == METADATA else None)

    def get(self, step: int, part: str) -> bytes | None:
        return self._client.get_checkpoint(step, metadata_index=0 if part == METADATA else None)

    def latest(self) -> int:
        return self._client.get_latest_checkpoints(limit=STEPS_RETAINED)[0]


class S3Path:
    name = S3

    def __init__(self, endpoint_url: str | None, bucket: str, rank: int):
        self._s3 = boto3.client("s3", endpoint_url=endpoint_url)
        self._bucket, self._rank = bucket, rank

    def _key(self, step: int, part: str) -> str:
        return f"step_{step:010d}/{f'rank_{self._rank}' if part == RANK else part}"

    def put(self, step: int, data: bytes, part: str) -> None:
        self._s3.put_object(Bucket=self._bucket, Key=self._key(step, part), Body=data)

    def get(self, step: int, part: str) -> bytes:
        return self._s3.get_object(Bucket=self._bucket, Key=self._key(step, part))["Body"].read()

    def latest(self) -> int:
        pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket)
        keys = [entry["Key"] for page in pages for entry in page.get("Contents", [])]
        return max(int(key.split("/")[0].removeprefix("step_")) for key in keys)


class DiskPath:
    name = DISK

    def __init__(self, directory: Path, rank: int):
        self._directory, self._rank = directory, rank

    def _file(self, step: int, part: str) -> Path:
        return self._directory / f"step_{step}" / (f"rank_{self._rank}" if part == RANK else part)

    def put(self, step: int, data: bytes, part: str) -> None:
        path = self._file(step, part)
        path.parent.mkdir(exist_ok=True)
        with open(path, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new name is durable too
        finally:
            os.close(directory)

    def get(self, step: int, part: str) -> bytes:
        return self._file(step, part).read_bytes()


# --- a process per rank --------------------------------------------------------------------------

def _rank_process(rank: int, ranks: int, shard_bytes: int, places: dict, commands) -> None:
    """One rank: its shard (and rank 0 the metadata), a client per path; answers each command with
    (the moment it finished, by the machine-wide monotonic clock, and its result). Read answers
    are checked after that moment, so the check is not timed."""
    data = {RANK: os.urandom(shard_bytes), METADATA: os.urandom(METADATA_BYTES) if rank == 0 else b""}
    paths = {TIER: TierPath(places[TIER], places[S3][1], rank, ranks),
             S3: S3Path(*places[S3], rank), DISK: DiskPath(Path(places[DISK]), rank)}
    commands.send("ready")
    while (command := commands.recv()) is not None:
        path_name, operation, step, part = command
        try:
            commands.send(_perform(paths[path_name], operation, step, part, data))
        except Exception as error:  # the parent reports it and stops
            commands.send((time.monotonic(), f"{type(error).__name__}: {error}"))


def _perform(path, operation: str, step: int, part: str, data: dict) -> tuple[float, object]:
    """(when it finished, its result): True for a write, whether a read got the rank's own bytes
    (compared after the clock was read), the newest step for `latest`."""
    if operation == "put":
        path.put(step, data[part], part)
        return time.monotonic(), True
    if operation == "get":
        got = path.get(step, part)
        finished = time.monotonic()
        return finished, got == data[part]
    newest = path.latest()
    return time.monotonic(), newest


class Ranks:
    """The ranks' processes (spawned: nothing inherited), driven in lockstep: a call sends one
    command to some ranks and returns when all answered, with the moment the last one finished."""

    def __init__(self, ranks: int, shard_bytes: int, places: dict):
        spawn = multiprocessing.get_context("spawn")
        self._pipes, self._processes = [], []
        for rank in range(ranks):
            mine, theirs = spawn.Pipe()
            process = spawn.Process(target=_rank_process, args=(rank, ranks, shard_bytes, places, theirs),
                                    daemon=True)
            process.start()
            self._pipes.append(mine)
            self._processes.append(process)
        for pipe in self._pipes:
            if not pipe.poll(START_SECONDS) or pipe.recv() != "ready":
                raise RuntimeError(f"a rank's process did not start within {START_SECONDS:.0f} s")

    def call(self, path_name: str, operation: str, step: int = 0, part: str = RANK,
             ranks: list[int] | None = None) -> tuple[float, list]:
        chosen = range(len(self._pipes)) if ranks is None else ranks
        for rank in chosen:
            self._pipes[rank].send((path_name, operation, step, part))
        answers = []
        for rank in chosen:
            if not self._pipes[rank].poll(OPERATION_SECONDS):
                raise RuntimeError(f"rank {rank}: {path_name} {operation} ran over {OPERATION_SECONDS:.0f} s")
            answers.append(self._pipes[rank].recv())
        for _, result in answers:
            if isinstance(result, str):
                raise RuntimeError(f"{path_name} {operation}: {result}")
        return max(finished for finished, _ in answers), [result for _, result in answers]

    def close(self) -> None:
        for pipe in self._pipes:
            pipe.send(None)
        for process in self._processes:
            process.join(START_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join()


# --- measuring and reporting --------------------------------------------------------------------

def _measure(ranks: Ranks, disk: Path, options) -> dict[tuple[str, str], list[float]]:
    """Seconds per (path, operation), one sample per step; every answer is checked."""
    seconds: dict[tuple[str, str], list[float]] = defaultdict(list)
    deadline = time.monotonic() + options.max_seconds
    for step in range(1, options.repeat + 1):
        if step > 1 and time.monotonic() > deadline:
            break
        for path in (TIER, S3, DISK):
            seconds[path, "write"].append(_write(ranks, path, step))
        for path in (TIER, S3, DISK):
            seconds[path, "read"].append(_read(ranks, path, step))
        for path in (TIER, S3):
            seconds[path, "resume"].append(_resume(ranks, path, step))
        shutil.rmtree(disk / f"step_{step}", ignore_errors=True)  # one step on the disk at a time
    return seconds


def _write(ranks: Ranks, path: str, step: int) -> float:
    """Every rank's shard at once, then, once all landed, rank 0 writes the metadata (DCP)."""
    started = time.monotonic()
    ranks.call(path, "put", step)
    finished, _ = ranks.call(path, "put", step, METADATA, ranks=[0])
    return finished - started


def _read(ranks: Ranks, path: str, step: int) -> float:
    """Rank 0 reads the metadata (DCP plans the load from it), then every rank its shard."""
    started = time.monotonic()
    finished = _fetch(ranks, path, step)
    return finished - started


def _resume(ranks: Ranks, path: str, written_step: int) -> float:
    """A restarted job: rank 0 finds the newest step, then the step is read as in `_read`."""
    started = time.monotonic()
    _, [step] = ranks.call(path, "latest", ranks=[0])
    _check(path, step == written_step)
    finished = _fetch(ranks, path, step)
    return finished - started


def _fetch(ranks: Ranks, path: str, step: int) -> float:
    _, [metadata_correct] = ranks.call(path, "get", step, METADATA, ranks=[0])
    finished, correct = ranks.call(path, "get", step)
    _check(path, metadata_correct and all(correct))
    return finished


def _check(path_name: str, correct: bool) -> None:
    if not correct:
        raise RuntimeError(f"{path_name} answered other bytes than were written")


def summarize(seconds: dict[tuple[str, str], list[float]], step_bytes: int) -> dict[str, float]:
    """Median MiB/s of each path's writes and reads, median resume seconds, and their ratios."""
    rate = {key: statistics.median(step_bytes / MIB / sample for sample in samples)
            for key, samples in seconds.items() if key[1] != "resume"}
    resume = {path: statistics.median(samples) for (path, operation), samples in seconds.items()
              if operation == "resume"}
    summary = {f"{path} {operation} MiB/s": value for (path, operation), value in rate.items()}
    summary |= {f"{path} resume s": value for path, value in resume.items()}
    for operation in ("write", "read"):
        for other in (S3, DISK):
            summary[f"{operation} RAM/{other}"] = rate[TIER, operation] / rate[other, operation]
    summary["resume S3/RAM"] = resume[S3] / resume[TIER]
    return summary


def _report(summary: dict[str, float]) -> str:
    lines = [f"{'path':<12}{'write MiB/s':>13}{'read MiB/s':>12}{'resume s':>10}"]
    for path in (TIER, S3, DISK):
        resume = summary.get(f"{path} resume s")
        write, read = summary[f"{path} write MiB/s"], summary[f"{path} read MiB/s"]
        resume_column = f"{resume:>10.3f}" if resume is not None else f"{'-':>10}"
        lines.append(f"{path:<12}{write:>13.0f}{read:>12.0f}{resume_column}")
    ratios = [f"{name} {summary[name]:.1f}x" for name in (
        "write RAM/S3", "write RAM/local disk", "read RAM/S3", "read RAM/local disk", "resume S3/RAM")]
    lines.append("summary (medians): " + ", ".join(ratios))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
