"""A host-wide lock for creating a network of one name on one engine, held by each of this host's
processes that drives the engine (the workers' prefork children, the API, a test cluster's
nodes). The engine (API 1.41) lets two concurrent creates of one local name both succeed, as its
duplicate check is not atomic with the create; then no container starts on that name (the
engine finds it ambiguous). A lock file per engine and bucket of names under the host's
temporary directory: few files, whatever the number of networks."""
import fcntl
import re
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BUCKETS = 64
DIRECTORY_NAME = "sageport-network-locks"


@contextmanager
def creating(engine_id: str, name: str) -> Iterator[None]:
    """Held while the caller looks the network up and creates it when missing."""
    directory = Path(tempfile.gettempdir()) / DIRECTORY_NAME
    directory.mkdir(mode=0o700, exist_ok=True)
    engine = re.sub(r"[^A-Za-z0-9]", "", engine_id)[:32] or "engine"
    with (directory / f"{engine}-{zlib.crc32(name.encode()) % BUCKETS}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
