"""Host-wide locks: one process of this host at a time for a key of a scope, across the workers'
prefork children, the API and a test cluster's nodes (a `flock` on a file in the host's temporary
directory). Keys share a bounded number of files per scope (BUCKETS): a lock may be held for
another key that shares its file, never missed. Where no lock file can be had (a directory
another user made, a full disk), the caller goes on unlocked, told so by the warning."""
import fcntl
import logging
import os
import re
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

BUCKETS = 64
DIRECTORY_NAME = "sageport-locks"
# How often a bounded wait tries the lock again.
RETRY_SECONDS = 0.05


class Busy(Exception):
    """The lock was held by another process for the whole of a bounded wait."""


@contextmanager
def held(scope: str, key: str, wait_seconds: float | None = None) -> Iterator[None]:
    """Hold the lock of `key` in `scope` for the block: waiting as long as it takes, or at most
    `wait_seconds` (then `Busy`)."""
    try:
        descriptor = _open(scope, key)
    except OSError as error:
        log.warning("%s %s: going on without a lock: %s", scope, key, error)
        yield
        return
    try:
        _lock(descriptor, wait_seconds)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _lock(descriptor: int, wait_seconds: float | None) -> None:
    if wait_seconds is None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # a read-only descriptor suffices for flock
        return
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise Busy from None
            time.sleep(RETRY_SECONDS)


def _open(scope: str, key: str) -> int:
    directory = Path(tempfile.gettempdir()) / DIRECTORY_NAME
    directory.mkdir(mode=0o755, exist_ok=True)
    prefix = re.sub(r"[^A-Za-z0-9-]", "", scope)[:48] or "scope"
    path = directory / f"{prefix}-{zlib.crc32(key.encode()) % BUCKETS}.lock"
    return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
