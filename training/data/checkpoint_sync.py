"""Checkpoints (CheckpointConfig): `<LocalPath>/<rel>` in the container ↔ `<S3Uri>/<rel>` in S3.

- `restore` (before the containers start): every object under the prefix is copied into the
  host's checkpoint directory, so the algorithm finds the checkpoints of an earlier job.
- A helper per host (`jobs/sidecars.py`) syncs while the job runs: every
  SAGEPORT_CHECKPOINT_SCAN_SECONDS it scans the directory (the stdlib has no inotify) and
  uploads each file whose size and mtime held still since the previous scan (a file still
  being written changes between scans), and deletes in S3 the files the algorithm deleted.
- `final_sync` (once the containers have stopped, on completion, failure or stop): every file
  is complete now; upload what changed, delete what went.
All hosts share the prefix, as in SageMaker.

What was uploaded is recorded per host in a manifest (`{rel: [size, mtime_ns]}`), written first
when the restore completes. Only a file in the manifest is ever deleted in S3, so a checkpoint
the host never had (another host's file, one written to S3 meanwhile) is never removed. A pass
records its uploads in the manifest (as PENDING) before it starts them: the helper is stopped
with a signal, and one that dies between an upload and the manifest's save must leave the
final sync knowing the object may exist (it is deleted if its file went, uploaded again if
not)."""
import json
import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.conf import settings

from jobs import sidecars
from storage import s3, safe_files

log = logging.getLogger(__name__)

MODULE = "training.data.checkpoint_sync"

Signature = tuple[int, int]  # (size, mtime_ns): a file whose signature held still is complete

# An upload started but not known to have finished: matches no file, so the next pass settles it.
PENDING: Signature = (-1, -1)


@dataclass(frozen=True)
class Plan:
    uploads: list[str]
    deletions: list[str]


def plan(current: dict[str, Signature], previous: dict[str, Signature], uploaded: dict[str, Signature],
         final: bool) -> Plan:
    """What one pass does: upload the files that changed since their upload and are complete
    (unchanged since the previous scan, or the containers have stopped), delete the uploaded
    files that are gone."""
    uploads = [
        rel for rel, signature in sorted(current.items())
        if signature != uploaded.get(rel) and (final or previous.get(rel) == signature)
    ]
    return Plan(uploads=uploads, deletions=sorted(rel for rel in uploaded if rel not in current))


def define(directory: Path, name: str, local_dir: Path, checkpoints: tuple[str, str]) -> None:
    """`checkpoints`: the (bucket, key) of CheckpointConfig.S3Uri, its bucket already checked to be
    the job's account's (accounts/s3_tenancy)."""
    bucket, key = checkpoints
    sidecars.define(directory, name, MODULE, {
        "local_dir": str(local_dir), "bucket": bucket, "key": key,
        "manifest": str(directory / f"{name}.manifest"),
    })


def restore(directory: Path, name: str) -> int:
    """Copy the prefix's objects into the local directory; returns how many. Safe to repeat."""
    spec = sidecars.spec_of(directory, name)
    local_dir = Path(spec["local_dir"])
    bucket, prefix = _bucket_and_prefix(spec)
    items = [
        (bucket, key, local_dir.joinpath(*_relative_path(bucket, key, prefix).parts))
        for key in s3.list_keys(bucket, prefix)
        if not key.endswith("/")
    ]
    s3.download_many(items)
    _save_manifest(Path(spec["manifest"]), scan(local_dir))
    return len(items)


def final_sync(directory: Path, name: str) -> None:
    """The last pass, once the containers have stopped (the helper must be stopped too). Only
    after a completed restore (its manifest exists): before that no container ran, and a
    half-restored file must never overwrite the checkpoint in S3."""
    spec = sidecars.spec_of(directory, name)
    if spec is not None and Path(spec["manifest"]).exists():
        sync_once(spec, previous={}, final=True)


def run(spec: dict) -> None:
    """The helper's main. SIGTERM (the job is over: `jobs/sidecars.stop_all`) lets the pass under
    way finish before the helper exits: a PUT cut off once its body was sent can still complete
    in S3 after the final sync deleted the object of a file that went, leaving it there."""
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    sync_until(spec, stopping)


def sync_until(spec: dict, stopping: threading.Event) -> None:
    """A pass every scan interval until the directory is gone or `stopping` is set."""
    local_dir = Path(spec["local_dir"])
    previous: dict[str, Signature] = {}
    while local_dir.is_dir() and not stopping.is_set():
        try:
            previous = sync_once(spec, previous, final=False)
        except s3.StorageError as error:  # the final sync will try again; keep the job running
            log.warning("checkpoint sync of %s: %s", local_dir, error)
        stopping.wait(settings.SAGEPORT_CHECKPOINT_SCAN_SECONDS)


def sync_once(spec: dict, previous: dict[str, Signature], final: bool) -> dict[str, Signature]:
    """One pass; returns this scan, the `previous` of the next pass."""
    local_dir, manifest = Path(spec["local_dir"]), Path(spec["manifest"])
    bucket, prefix = _bucket_and_prefix(spec)
    current = scan(local_dir)
    if not local_dir.is_dir():
        return current  # removed under us (the job is over): an empty scan must delete nothing
    uploaded = _load_manifest(manifest)
    todo = plan(current, previous, uploaded, final)
    if todo.uploads:
        _save_manifest(manifest, {**uploaded, **{rel: PENDING for rel in todo.uploads}})
        done = s3.upload_contained(local_dir, [(rel, bucket, prefix + rel) for rel in todo.uploads])
        uploaded.update({rel: current[rel] for rel in done})
    if todo.deletions:
        s3.delete_keys(bucket, [prefix + rel for rel in todo.deletions])
        for rel in todo.deletions:
            del uploaded[rel]
    if todo.uploads or todo.deletions:
        _save_manifest(manifest, uploaded)
        log.info("%s: %d uploaded, %d deleted", local_dir, len(todo.uploads), len(todo.deletions))
    return current


def scan(local_dir: Path) -> dict[str, Signature]:
    """The regular files under `local_dir`, by relative path. The container owns the tree: no
    symlink is followed, at any depth (a directory swapped for a link to a host directory is
    not entered), and a file swapped for one before its upload is skipped by the upload."""
    return {
        entry.relative: (entry.status.st_size, entry.status.st_mtime_ns)
        for entry in safe_files.walk(local_dir)
        if entry.kind == safe_files.FILE
    }


def _bucket_and_prefix(spec: dict) -> tuple[str, str]:
    """`s3://b/ckpt` and `s3://b/ckpt/` both hold `<rel>` at key `ckpt/<rel>`."""
    key = spec["key"]
    return spec["bucket"], (key.rstrip("/") + "/" if key.strip("/") else "")


def _relative_path(bucket: str, key: str, prefix: str) -> PurePosixPath:
    relative = safe_files.contained(key[len(prefix):])
    if relative is None:
        raise s3.StorageError(
            f"Refusing to restore checkpoint {s3.s3_uri(bucket, key)}: "
            "it would land outside the checkpoint directory"
        )
    return relative


def _load_manifest(path: Path) -> dict[str, Signature]:
    try:
        return {rel: tuple(signature) for rel, signature in json.loads(path.read_text()).items()}
    except (FileNotFoundError, ValueError):
        return {}


def _save_manifest(path: Path, uploaded: dict[str, Signature]) -> None:
    sidecars.write_atomically(path, json.dumps(uploaded))


if __name__ == "__main__":
    sidecars.run_helper(run)
