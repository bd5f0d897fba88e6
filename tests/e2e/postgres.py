"""A private PostgreSQL for a test: Debian's server binaries, a cluster in a temporary directory,
listening on a free port of 127.0.0.1 only (and its socket in that directory), never a system
one. Run as the `postgres` user when the tests run as root (the server refuses root); tuned for
a throw-away database (no fsync, small buffers).

`Database.restore`/`dump` keep a schema in a file (plain SQL, `pg_dump`): migrating Sageport's
database takes tens of seconds on two busy cores, restoring its dump one."""
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.stack import LOOPBACK, free_port

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)  # the newest first
DATABASE = "sageport"
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB "
    "-c max_connections=200"
)


@dataclass(frozen=True)
class Database:
    url: str
    run: Callable[..., subprocess.CompletedProcess]  # a client program, as the server's owner
    binaries: Path
    port: int

    def dump(self, path: Path) -> None:
        """The whole database as SQL, written to a draft and renamed (other sessions read it)."""
        done = self.run(str(self.binaries / "pg_dump"), *self._where(), "--no-owner", DATABASE)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        draft.write_bytes(done.stdout)
        draft.rename(path)

    def restore(self, path: Path) -> None:
        self.run(str(self.binaries / "psql"), *self._where(), "-q", "-v", "ON_ERROR_STOP=1", DATABASE,
                 stdin=path.read_bytes())

    def _where(self) -> list[str]:
        return ["-h", LOOPBACK, "-p", str(self.port), "-U", DATABASE]


@contextmanager
def private_postgres() -> Iterator[Database]:
    """Start a cluster with an empty database; stopped (fast) and removed afterwards."""
    if not BIN_DIRS:
        pytest.skip("PostgreSQL's server binaries are not installed (Debian: postgresql)")
    binaries = BIN_DIRS[0]
    owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    root = Path(tempfile.mkdtemp(prefix="sgpg"))  # in /tmp: the owner must reach it
    shutil.chown(root, owner.pw_uid, owner.pw_gid)
    data, port = root / "data", free_port()

    def as_owner(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", owner.pw_name, "--"] if os.geteuid() == 0 else []
        return subprocess.run([*prefix, *argv], input=stdin, check=True, capture_output=True, timeout=60)

    as_owner(str(binaries / "initdb"), "-D", str(data), "-U", DATABASE, "--auth=trust", "--no-sync",
             "-E", "UTF8", "--locale=C")
    server = f"-c listen_addresses={LOOPBACK} -p {port} -k {root} {SERVER_OPTIONS}"
    as_owner(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", server,
             "-w", "start")
    try:
        as_owner(str(binaries / "createdb"), "-h", LOOPBACK, "-p", str(port), "-U", DATABASE, DATABASE)
        yield Database(f"postgres://{DATABASE}@{LOOPBACK}:{port}/{DATABASE}", as_owner, binaries, port)
    finally:
        as_owner(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
