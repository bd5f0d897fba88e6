"""Checkpoint write, read and resume: the RAM tier against S3 and local disk, in one run.

Each step is what PyTorch DCP does through AWS's `amzn-sagemaker-checkpointing`: one blob per rank
(--ranks blobs of --shard-mib random bytes, the ranks at once, a thread each: on HyperPod each
rank is a process, so here the clients' Python work shares one GIL), then, once every rank
succeeded, a small metadata shard. The same bytes go to, and are read back from:
(a) the RAM tier: Sageport's tier service (`tier/`), one node started in a child process on
    127.0.0.1, its shards in a fresh directory under /dev/shm, driven by AWS's own
    `InMemoryCheckpointClient` (one per rank, as the DCP writer and reader use it); one node, so
    no replica is copied to a neighbour;
(b) S3: boto3 `put_object` / `get_object`, one request per shard (no multipart), in a bucket of
    the bench's own;
(c) local disk: a file per shard under --disk-dir, written and fsync'ed (the step's directory
    too), read back without dropping the page cache, so disk reads are optimistic (from memory).
Resume is what a restarted job's reader does: find the newest step (the tier's `latest`; an S3
listing of the checkpoint prefix), then fetch every rank's shard and the metadata of that step,
with the clients already created. Every step runs each path once, in the order above; the medians
and their ratios are printed, then one summary line. Bounded: at most --repeat steps, and no step
starts after --max-seconds. The tier's directory, the bucket with its objects and the disk files
are removed at the end.

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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import boto3
from amzn_sagemaker_checkpointing.config.in_memory_client import InMemoryClientConfig
from amzn_sagemaker_checkpointing.storage.clients.inmemory.inmemory_client import InMemoryCheckpointClient
from botocore.config import Config

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


def main() -> int:
    if not __package__:
        sys.exit("run it from the repository root as: .venv/bin/python -m bench.tier")
    options = _arguments()
    shards = [os.urandom(options.shard_mib * MIB) for _ in range(options.ranks)]
    metadata = os.urandom(METADATA_BYTES)
    step_bytes = sum(map(len, shards)) + len(metadata)
    s3 = boto3.client("s3", endpoint_url=options.s3_endpoint_url,
                      config=Config(max_pool_connections=options.ranks + 1))
    bucket = f"tier-bench-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    try:
        with _tier_service(step_bytes) as url, tempfile.TemporaryDirectory(dir=options.disk_dir) as disk:
            paths = (TierPath(url, bucket, options.ranks), S3Path(s3, bucket, bucket, options.ranks),
                     DiskPath(Path(disk), options.ranks))
            seconds = _measure(*paths, shards, metadata, options)
    finally:
        delete_bucket(s3, bucket)
    print(f"{options.ranks} ranks x {options.shard_mib} MiB + {METADATA_BYTES // 1024} KiB metadata a step, "
          f"steps measured: {len(seconds[TIER, 'write'])}")
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


# --- the three paths: write(step), read(step) → (shards, metadata), resume() → (step, shards, metadata)

class TierPath:
    name = TIER

    def __init__(self, url: str, namespace: str, ranks: int):
        config = InMemoryClientConfig(base_url=url)
        # one client per rank, and the metadata's own, as each process of a job has its own
        self._clients = [InMemoryCheckpointClient(namespace, rank=rank, world_size=ranks, config=config)
                         for rank in range(ranks + 1)]
        self._clients[0].get_or_create_namespace()
        self._pool = ThreadPoolExecutor(ranks + 1)

    def write(self, step: int, shards: list[bytes], metadata: bytes) -> None:
        list(self._pool.map(lambda client, shard: client.put_checkpoint(step, shard), self._clients, shards))
        self._clients[-1].put_checkpoint(step, metadata, metadata_index=0)

    def read(self, step: int) -> tuple[list[bytes], bytes]:
        data = list(self._pool.map(lambda client: client.get_checkpoint(step), self._clients[:-1]))
        return data, self._clients[-1].get_checkpoint(step, metadata_index=0)

    def resume(self) -> tuple[int, list[bytes], bytes]:
        step = self._clients[0].get_latest_checkpoints(limit=STEPS_RETAINED)[0]
        metadata = self._pool.submit(self._clients[-1].get_checkpoint, step, metadata_index=0)
        data = list(self._pool.map(lambda client: client.get_checkpoint(step), self._clients[:-1]))
        return step, data, metadata.result()


class S3Path:
    name = S3

    def __init__(self, s3, bucket: str, prefix: str, ranks: int):
        self._s3, self._bucket, self._prefix, self._ranks = s3, bucket, prefix, ranks
        self._pool = ThreadPoolExecutor(ranks + 1)

    def _keys(self, step: int) -> list[str]:
        """The ranks' keys, then the metadata's."""
        parts = [f"rank_{rank}" for rank in range(self._ranks)] + ["metadata"]
        return [f"{self._prefix}/step_{step:010d}/{part}" for part in parts]

    def _get(self, key: str) -> bytes:
        return self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()

    def write(self, step: int, shards: list[bytes], metadata: bytes) -> None:
        *rank_keys, metadata_key = self._keys(step)
        list(self._pool.map(lambda key, body: self._s3.put_object(Bucket=self._bucket, Key=key, Body=body),
                            rank_keys, shards))
        self._s3.put_object(Bucket=self._bucket, Key=metadata_key, Body=metadata)

    def read(self, step: int) -> tuple[list[bytes], bytes]:
        *data, metadata = self._pool.map(self._get, self._keys(step))
        return data, metadata

    def resume(self) -> tuple[int, list[bytes], bytes]:
        listing = self._s3.get_paginator("list_objects_v2")
        pages = listing.paginate(Bucket=self._bucket, Prefix=f"{self._prefix}/")
        keys = [entry["Key"] for page in pages for entry in page.get("Contents", [])]
        step = max(int(key.split("/")[1].removeprefix("step_")) for key in keys)
        *data, metadata = self._pool.map(self._get, self._keys(step))
        return step, data, metadata


class DiskPath:
    name = DISK

    def __init__(self, directory: Path, ranks: int):
        self._directory, self._ranks = directory, ranks
        self._pool = ThreadPoolExecutor(ranks)

    def _files(self, step: int) -> list[Path]:
        """The ranks' files, then the metadata's."""
        return [self._directory / f"step_{step}" / f"rank_{rank}" for rank in range(self._ranks)] + [
            self._directory / f"step_{step}" / "metadata"]

    def write(self, step: int, shards: list[bytes], metadata: bytes) -> None:
        *rank_files, metadata_file = self._files(step)
        metadata_file.parent.mkdir()
        list(self._pool.map(_write_synced, rank_files, shards))
        _write_synced(metadata_file, metadata)
        directory = os.open(metadata_file.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new names are durable too
        finally:
            os.close(directory)

    def read(self, step: int) -> tuple[list[bytes], bytes]:
        *data, metadata = self._pool.map(Path.read_bytes, self._files(step))
        return data, metadata

    def forget(self, step: int) -> None:
        """Keep one step on the disk at a time (outside the timings)."""
        shutil.rmtree(self._directory / f"step_{step}", ignore_errors=True)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


# --- measuring and reporting --------------------------------------------------------------------

def _measure(tier: TierPath, s3: S3Path, disk: DiskPath, shards: list[bytes], metadata: bytes,
             options) -> dict[tuple[str, str], list[float]]:
    """Seconds per (path, operation), one sample per step; every answer is checked."""
    seconds: dict[tuple[str, str], list[float]] = defaultdict(list)
    deadline = time.monotonic() + options.max_seconds
    for step in range(1, options.repeat + 1):
        if step > 1 and time.monotonic() > deadline:
            break
        for path in (tier, s3, disk):
            seconds[path.name, "write"].append(_timed(path.write, step, shards, metadata)[0])
        for path in (tier, s3, disk):
            elapsed, (data, got_metadata) = _timed(path.read, step)
            _check(path.name, data == shards and got_metadata == metadata)
            seconds[path.name, "read"].append(elapsed)
        for path in (tier, s3):
            elapsed, (found, data, got_metadata) = _timed(path.resume)
            _check(path.name, found == step and data == shards and got_metadata == metadata)
            seconds[path.name, "resume"].append(elapsed)
        disk.forget(step)
    return seconds


def _timed(call, *arguments) -> tuple[float, object]:
    begin = time.perf_counter()
    result = call(*arguments)
    return time.perf_counter() - begin, result


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
