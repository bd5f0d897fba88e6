"""The node's shards and namespace records under --root (memory-backed), and the rules that keep
them within the namespace's retention and the node's RAM budget.

Layout: `accounts/<account>/<sha256(namespace)[:32]>/namespace.json` and
`…/steps/<step>/<rank>.shard`; `tmp/` holds files being written (emptied at start), `spare/`
evicted steps' files for the next writes to fill again (spares.py). One lock
guards the index and every rename/unlink; bodies stream outside it. A write reserves its declared
length first, so concurrent writes never overshoot the budget together."""

import base64
import binascii
import errno
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import xxhash

from tier import files, rules
from tier.errors import TierError, bad_request, conflict, insufficient_storage, not_found
from tier.spares import SparePool

log = logging.getLogger("sageport.tier")

CHUNK_BYTES = 1024 * 1024
MAX_NAMESPACE_CHARS = 255
MAX_RANKS = 65536
MAX_STEPS_RETAINED = 100
MAX_NAMESPACES_PER_ACCOUNT = 1000  # on one node: records are small, but not free
PERSIST_USE_SECONDS = 10.0  # last_used is written back at most this often (it only drives expiry)


@dataclass(frozen=True)
class Namespace:
    account: str
    name: str
    num_ranks: int
    steps_retained: int
    owner_job_arn: str  # the job that last used it: the namespace lives while that job runs
    created: float
    last_used: float

    def document(self) -> dict:
        return {
            "account": self.account,
            "namespace": self.name,
            "num_ranks": self.num_ranks,
            "steps_retained": self.steps_retained,
            "steps_to_retain_per_rank": self.steps_retained,  # the name AWS's reference server uses
            "owner_job_arn": self.owner_job_arn,
            "created": self.created,
            "last_used": self.last_used,
        }

    @classmethod
    def from_document(cls, account: str, document: dict) -> "Namespace":
        """ValueError when the document is not a namespace record."""
        try:
            record = cls(account, str(document["namespace"]), int(document["num_ranks"]),
                         int(document["steps_retained"]), str(document.get("owner_job_arn", "")),
                         float(document["created"]), float(document["last_used"]))
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a namespace record: {error}") from error
        check_namespace_name(record.name)
        check_namespace_shape(record.num_ranks, record.steps_retained)
        return record


@dataclass(frozen=True)
class Shard:
    path: Path
    size: int
    shard_meta: str
    written: float


@dataclass
class _Entry:
    record: Namespace
    directory: Path
    steps: dict[int, dict[int, Shard]] = field(default_factory=dict)
    persisted_use: float = 0.0

    def ranks_by_step(self) -> dict[int, list[int]]:
        return {step: sorted(ranks) for step, ranks in self.steps.items()}


def check_namespace_name(name: str) -> None:
    if not name or len(name) > MAX_NAMESPACE_CHARS or any(ord(char) < 32 for char in name):
        raise bad_request(f"A namespace is 1 to {MAX_NAMESPACE_CHARS} printable characters.")


def check_namespace_shape(num_ranks: int, steps_retained: int) -> None:
    if not 1 <= num_ranks <= MAX_RANKS:
        raise bad_request(f"num_ranks must be between 1 and {MAX_RANKS}.")
    if not 1 <= steps_retained <= MAX_STEPS_RETAINED:
        raise bad_request(f"steps_retained must be between 1 and {MAX_STEPS_RETAINED}.")


def expected_checksum(shard_meta: str | None) -> bytes:
    """The xxh3_128 digest a Shard-Meta header declares (400 when it declares none)."""
    try:
        meta = json.loads(shard_meta or "")
        if not isinstance(meta, dict) or meta.get("algorithm") != "xxh3_128":
            raise ValueError("algorithm")
        digest = base64.b64decode(meta["checksum"], validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise bad_request('Shard-Meta must be {"checksum": <base64 xxh3_128>, "algorithm": "xxh3_128"}.') \
            from error
    if len(digest) != 16:
        raise bad_request("Shard-Meta's checksum is not a 16-byte xxh3_128 digest.")
    return digest


@contextmanager
def _filesystem():
    """The root's failures as answers: full memory is 507 (the writer falls back to S3)."""
    try:
        yield
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.ENOMEM, errno.EDQUOT):
            raise insufficient_storage(f"This node's checkpoint memory is full: {error.strerror}.") from error
        log.error("tier store: %s", error)
        raise TierError(500, "InternalError", f"The tier could not write its memory: {error.strerror}.") \
            from error


def _free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


class Store:
    def __init__(self, root: Path, budget_bytes: Callable[[], int], clock: Callable[[], float] = time.time,
                 free_bytes: Callable[[Path], int] = _free_bytes):
        self._root = Path(root)
        self._temp = self._root / "tmp"
        self._accounts = self._root / "accounts"
        self._budget = budget_bytes
        self._clock = clock
        self._free = free_bytes
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], _Entry] = {}
        # When a client deleted each namespace (its tombstone): a copy created before that, held
        # by a node that was down during the delete, is the deleted namespace's, never to be
        # served, adopted or copied again.
        self._deleted: dict[tuple[str, str], float] = {}
        self._used = 0
        self._reserved = 0
        self._spares = SparePool(self._root / "spare")
        self._load()

    # --- namespaces ---

    def namespace(self, account: str, name: str) -> Namespace | None:
        with self._lock:
            entry = self._entries.get((account, name))
            return entry.record if entry else None

    def create_namespace(self, account: str, name: str, num_ranks: int, steps_retained: int,
                         job_arn: str) -> tuple[Namespace, bool]:
        """(the record, whether it was created); 409 when it exists with another shape."""
        check_namespace_name(name)
        check_namespace_shape(num_ranks, steps_retained)
        with self._lock:
            entry = self._entries.get((account, name))
            if entry is not None:
                if (entry.record.num_ranks, entry.record.steps_retained) != (num_ranks, steps_retained):
                    raise conflict(f"Namespace '{name}' exists with num_ranks={entry.record.num_ranks} "
                                   f"and steps_retained={entry.record.steps_retained}.")
                return entry.record, False
            if sum(owner == account for owner, _ in self._entries) >= MAX_NAMESPACES_PER_ACCOUNT:
                raise conflict(f"This account has {MAX_NAMESPACES_PER_ACCOUNT} namespaces on this node; "
                               "delete some first.")
            now = self._clock()
            record = Namespace(account, name, num_ranks, steps_retained, job_arn, now, now)
            self._deleted.pop((account, name), None)
            return self._add_entry(record).record, True

    def adopt_namespace(self, record: Namespace) -> Namespace | None:
        """Keep a copy of a peer's record (replicas, and writes to a namespace created on
        another node); an existing local record wins. None when the record is a copy of a
        namespace deleted since it was created (`deleted_since_created`)."""
        with self._lock:
            entry = self._entries.get((record.account, record.name))
            if entry is not None:
                return entry.record
            if self._deleted_since_created(record):
                return None
            self._deleted.pop((record.account, record.name), None)  # a namespace made anew
            return self._add_entry(record).record

    def deleted_since_created(self, record: Namespace) -> bool:
        """Whether a client deleted the namespace (through this node) after `record` was made."""
        with self._lock:
            return self._deleted_since_created(record)

    def _deleted_since_created(self, record: Namespace) -> bool:
        deleted_at = self._deleted.get((record.account, record.name))
        return deleted_at is not None and record.created <= deleted_at

    def forget_deletions(self, before: float) -> None:
        """Drop the tombstones older than `before` (the namespaces' grace): a copy that old left
        on a node that was down is unused as long, and expires there by itself (expiry.py)."""
        with self._lock:
            self._deleted = {key: moment for key, moment in self._deleted.items() if moment >= before}

    def touch(self, account: str, name: str, job_arn: str | None, used_at: float | None = None) -> None:
        """A container used the namespace (now, or at `used_at` when a peer's copy says when):
        it lives while `job_arn` runs, and `grace` after."""
        with self._lock:
            entry = self._entries.get((account, name))
            if entry is None:
                return
            used = max(entry.record.last_used, self._clock() if used_at is None else used_at)
            owner = job_arn or entry.record.owner_job_arn
            new_owner = owner != entry.record.owner_job_arn
            entry.record = replace(entry.record, last_used=used, owner_job_arn=owner)
            if new_owner or used - entry.persisted_use >= PERSIST_USE_SECONDS:
                with _filesystem():
                    self._persist(entry)

    def delete_namespace(self, account: str, name: str, unused_since: float | None = None) -> bool:
        """Whether it was here (and, with `unused_since`, not used since that moment). A client's
        delete (no `unused_since`) leaves a tombstone, whether or not it was here."""
        with self._lock:
            if unused_since is None:
                self._deleted[(account, name)] = self._clock()
            entry = self._entries.get((account, name))
            if entry is None or (unused_since is not None and entry.record.last_used >= unused_since):
                return False
            del self._entries[(account, name)]
            self._used -= sum(shard.size for ranks in entry.steps.values() for shard in ranks.values())
            self._spares.release_all()  # a job's end: its evicted steps' files are not needed again
            trash = files.temp_path(self._temp)
            try:
                os.replace(entry.directory, trash)  # gone at once; the files go below
            except FileNotFoundError:
                return True
        shutil.rmtree(trash, ignore_errors=True)
        return True

    def namespaces_of(self, account: str) -> list[str]:
        with self._lock:
            return [name for (owner, name) in self._entries if owner == account]

    def unused_since(self, moment: float) -> list[Namespace]:
        with self._lock:
            return [entry.record for entry in self._entries.values() if entry.record.last_used < moment]

    def holdings(self) -> list[tuple[Namespace, dict[int, list[int]]]]:
        """Every namespace here with its inventory (what the repair sweep checks)."""
        with self._lock:
            return [(entry.record, entry.ranks_by_step()) for entry in self._entries.values()]

    def holds(self, account: str, name: str, rank: int, step: int) -> bool:
        with self._lock:
            entry = self._entries.get((account, name))
            return entry is not None and rank in entry.steps.get(step, {})

    def inventory(self, account: str, name: str) -> dict[int, list[int]] | None:
        with self._lock:
            entry = self._entries.get((account, name))
            return entry.ranks_by_step() if entry else None

    # --- shards ---

    def put_shard(self, account: str, name: str, rank: int, step: int, length: int, shard_meta: str | None,
                  body) -> Shard:
        """Stream `length` bytes of `body` into the shard, verified against its Shard-Meta."""
        expected = expected_checksum(shard_meta)
        with self._lock:
            entry = self._require(account, name)
            if not 0 <= rank < entry.record.num_ranks:
                raise bad_request(f"Rank {rank} is outside namespace '{name}' (num_ranks="
                                  f"{entry.record.num_ranks}); use a new namespace for another world size.")
            self._reserve(length)
            temp = files.temp_path(self._temp)
            recycled = self._spares.take(length, temp)
        try:
            self._receive(temp, body, length, shard_meta, expected, recycled)
            with self._lock:
                return self._place(entry, temp, rank, step, length, shard_meta)
        finally:
            with self._lock:
                self._reserved -= length
            temp.unlink(missing_ok=True)

    def open_shard(self, account: str, name: str, rank: int, step: int):
        """(shard, file positioned at its body) or None; the caller closes the file. An open file
        stays readable after eviction unlinks it."""
        with self._lock:
            entry = self._entries.get((account, name))
            shard = entry.steps.get(step, {}).get(rank) if entry else None
            if shard is None:
                return None
            try:
                handle = self._spares.open_reader(shard.path)
                files.read_shard_header(handle)
            except (OSError, ValueError) as error:  # damaged under us: it is gone, not an error
                log.warning("tier store: dropping unreadable %s (%s)", shard.path, error)
                self.delete_shard_locked(entry, rank, step)
                return None
        return shard, handle

    def delete_shard(self, account: str, name: str, rank: int, step: int) -> bool:
        with self._lock:
            entry = self._entries.get((account, name))
            return self.delete_shard_locked(entry, rank, step) if entry else False

    def delete_shard_locked(self, entry: _Entry, rank: int, step: int) -> bool:
        shard = entry.steps.get(step, {}).get(rank)
        if shard is None:
            return False
        shard.path.unlink(missing_ok=True)
        self._used -= shard.size
        del entry.steps[step][rank]
        if not entry.steps[step]:
            self._remove_step_dir(entry, step)
        return True

    def used_bytes(self) -> int:
        with self._lock:
            return self._used

    # --- inside ---

    def _require(self, account: str, name: str) -> _Entry:
        entry = self._entries.get((account, name))
        if entry is None:
            raise not_found(f"Namespace '{name}' not found.")
        return entry

    def _receive(self, temp: Path, body, length: int, shard_meta: str, expected: bytes,
                 recycled: bool) -> None:
        """The body's OSErrors (the caller went away) pass through; the file's become answers. A
        recycled file is written over, not truncated first: its pages are kept."""
        hasher = xxhash.xxh3_128()
        with _filesystem(), open(temp, "r+b" if recycled else "wb") as out:
            out.write(files.shard_header(shard_meta, length))
            remaining = length
            while remaining:
                piece = body.read(min(CHUNK_BYTES, remaining))
                if not piece:
                    raise bad_request("The body ended before its Content-Length.")
                hasher.update(piece)
                with _filesystem():
                    out.write(piece)
                remaining -= len(piece)
            with _filesystem():
                out.truncate()  # a recycled file's rest
        if hasher.digest() != expected:
            raise bad_request("The body's xxh3_128 checksum does not match Shard-Meta; nothing was kept.")

    def _place(self, entry: _Entry, temp: Path, rank: int, step: int, length: int, shard_meta: str) -> Shard:
        if self._entries.get((entry.record.account, entry.record.name)) is not entry:
            raise not_found(f"Namespace '{entry.record.name}' was deleted during the write.")
        step_dir = entry.directory / "steps" / str(step)
        shard = Shard(step_dir / f"{rank}.shard", length, shard_meta, self._clock())
        with _filesystem():
            step_dir.mkdir(parents=True, exist_ok=True)
            os.replace(temp, shard.path)
        previous = entry.steps.setdefault(step, {}).get(rank)
        entry.steps[step][rank] = shard
        self._used += length - (previous.size if previous else 0)
        record = entry.record
        for victim in rules.retention_victims(entry.ranks_by_step(), record.num_ranks, record.steps_retained):
            log.info("tier retention account=%s namespace=%s step=%d", record.account, record.name, victim)
            self._drop_step(entry, victim, recycle=True)
        return shard

    def _reserve(self, length: int) -> None:
        budget = self._budget()
        if length > budget:
            raise insufficient_storage(f"A shard of {length} bytes is larger than this node's whole "
                                       f"checkpoint budget ({budget} bytes).")
        while not self._fits(length, budget):
            if self._spares.release_one():
                continue
            victim = self._budget_victim()
            if victim is None:
                raise insufficient_storage(
                    f"This node's checkpoint memory is full ({self._used} of {budget} bytes used, "
                    f"{self._reserved} being written) and holds no older step to evict; "
                    f"{length} more bytes do not fit.")
            entry, step = victim
            log.info("tier evict account=%s namespace=%s step=%d reason=budget", entry.record.account,
                     entry.record.name, step)
            self._drop_step(entry, step)
        self._reserved += length

    def _fits(self, length: int, budget: int) -> bool:
        return (self._used + self._spares.bytes + self._reserved + length <= budget
                and self._reserved + length + files.MAX_HEADER_BYTES <= self._free(self._root))

    def _budget_victim(self) -> tuple[_Entry, int] | None:
        """The oldest-written step no namespace needs to keep."""
        candidates = []
        for entry in self._entries.values():
            steps = entry.ranks_by_step()
            keep = rules.protected_steps(steps, entry.record.num_ranks)
            for step in steps.keys() - keep:
                written = max(shard.written for shard in entry.steps[step].values())
                candidates.append((written, step, entry))
        if not candidates:
            return None
        _, step, entry = min(candidates, key=lambda candidate: candidate[:2])
        return entry, step

    def _drop_step(self, entry: _Entry, step: int, recycle: bool = False) -> None:
        """`recycle`: its files become spares for the next writes (retention; the budget wants
        the bytes back)."""
        for shard in entry.steps.pop(step, {}).values():
            if recycle:
                self._spares.discard(shard.path)
            else:
                shard.path.unlink(missing_ok=True)
            self._used -= shard.size
        self._remove_step_dir(entry, step)

    def _remove_step_dir(self, entry: _Entry, step: int) -> None:
        entry.steps.pop(step, None)
        shutil.rmtree(entry.directory / "steps" / str(step), ignore_errors=True)

    def _add_entry(self, record: Namespace) -> _Entry:
        digest = hashlib.sha256(record.name.encode()).hexdigest()[:32]
        directory = self._accounts / record.account / digest
        entry = _Entry(record, directory)
        with _filesystem():
            (directory / "steps").mkdir(parents=True, exist_ok=True)
            self._persist(entry)
        self._entries[(record.account, record.name)] = entry
        return entry

    def _persist(self, entry: _Entry) -> None:
        files.write_json_atomically(entry.directory / "namespace.json", entry.record.document(), self._temp)
        entry.persisted_use = entry.record.last_used

    # --- start: find what a previous run left ---

    def _load(self) -> None:
        shutil.rmtree(self._temp, ignore_errors=True)
        self._temp.mkdir(parents=True, exist_ok=True)
        self._accounts.mkdir(parents=True, exist_ok=True)
        for account_dir in sorted(self._accounts.iterdir()):
            for directory in sorted(account_dir.iterdir()):
                self._load_namespace(account_dir.name, directory)
        log.info("tier store %s: %d namespaces, %d bytes", self._root, len(self._entries), self._used)

    def _load_namespace(self, account: str, directory: Path) -> None:
        document = files.read_json(directory / "namespace.json")
        try:
            record = Namespace.from_document(account, document or {})
        except (ValueError, TierError):
            log.warning("tier store: dropping %s (no valid namespace record)", directory)
            shutil.rmtree(directory, ignore_errors=True)
            return
        entry = _Entry(record, directory, persisted_use=record.last_used)
        self._entries[(account, record.name)] = entry
        for step_dir in sorted((directory / "steps").glob("*")):
            for path in sorted(step_dir.glob("*.shard")):
                self._load_shard(entry, step_dir.name, path)

    def _load_shard(self, entry: _Entry, step_name: str, path: Path) -> None:
        try:
            step, rank = int(step_name), int(path.stem)
            with open(path, "rb") as handle:
                shard_meta, size = files.read_shard_header(handle)
            if not 0 <= rank < entry.record.num_ranks:
                raise ValueError("rank outside the namespace")
        except (OSError, ValueError) as error:
            log.warning("tier store: dropping %s (%s)", path, error)
            path.unlink(missing_ok=True)
            return
        entry.steps.setdefault(step, {})[rank] = Shard(path, size, shard_meta, path.stat().st_mtime)
        self._used += size
