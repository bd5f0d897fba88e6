"""A host-wide lock for creating a network of one name on one engine, held by each of this host's
processes that drives the engine (the workers' prefork children, the API, a test cluster's
nodes). The engine (API 1.41) lets two concurrent creates of one local name both succeed, as its
duplicate check is not atomic with the create; then no container starts on that name (the
engine finds it ambiguous). A lock file per engine and bucket of names under the host's
temporary directory: few files, whatever the number of networks. Where no lock file can be had
(a directory another user made, a full disk), the create goes on unlocked: the runtime repairs
a name two networks share (`DockerRuntime._network`), so the lock only spares that repair."""
import fcntl
import logging
import os
import re
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

BUCKETS = 64
DIRECTORY_NAME = "sageport-network-locks"


@contextmanager
def creating(engine_id: str, name: str) -> Iterator[None]:
    """Held while the caller looks the network up and creates it when missing."""
    try:
        descriptor = _open(engine_id, name)
    except OSError as error:
        log.warning('creating network "%s" without a lock: %s', name, error)
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # a read-only descriptor suffices for flock
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _open(engine_id: str, name: str) -> int:
    directory = Path(tempfile.gettempdir()) / DIRECTORY_NAME
    directory.mkdir(mode=0o755, exist_ok=True)
    engine = re.sub(r"[^A-Za-z0-9]", "", engine_id)[:32] or "engine"
    path = directory / f"{engine}-{zlib.crc32(name.encode()) % BUCKETS}.lock"
    return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
