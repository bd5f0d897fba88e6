"""A container job's per-host directories on the node's disk, and the files the platform writes
there before the container starts.

Layout: `<data>/<kind's folder>/<id>-<name>/<host>/`, one tree per instance, never shared or
hard-linked between instances (a link would let one container's write show in another's tree);
the feature says which directories it holds and where they are mounted (training:
/opt/ml/input, model, output; processing: /opt/ml/processing/<LocalPath>, /opt/ml/config).
Beside them, in no directory a container can write, `<host>/hosts`: the container's /etc/hosts
(jobs/addresses.py says why it is ours). Files a container writes (a failure file, an exit
message) are read only through storage/safe_files, without trusting the container."""
import json
from collections.abc import Iterable
from pathlib import Path

from jobs.identity import JobIdentity, job_root
from runtime.base import Mount
from storage import safe_files

HOSTS_FILE = "hosts"


def host_names(instance_count: int) -> list[str]:
    """SageMaker's host names, sorted as resourceconfig.json lists them."""
    return sorted(f"algo-{index}" for index in range(1, instance_count + 1))


def is_directory_name(name: str) -> bool:
    """Whether `name` is one directory entry of its own: not empty, `.`, `..`, or a path."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


def host_root(job: JobIdentity, host: str) -> Path:
    return job_root(job) / host


def create_afresh(root: Path, directories: Iterable[Path]) -> None:
    """Create `directories` (below `root`) in an empty tree: whatever an earlier attempt left in
    `root` is removed first, so none of its files reach this attempt's outputs."""
    safe_files.remove_tree(root)
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)


def hosts_mount(root: Path) -> Mount:
    return Mount(str(root / HOSTS_FILE), "/etc/hosts", read_only=True)


def write_hosts(root: Path, names: dict[str, str]) -> None:
    """The container's /etc/hosts: localhost and `names` (name -> address), nothing else.
    Ours rather than Docker's: Docker lists the container's own name once per network it is
    on, and the resolver prefers a link-local address (the services network's) over the
    job network's, where peers reach it."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines += [f"{address}\t{name}" for name, address in names.items()]
    write_text(root / HOSTS_FILE, "\n".join(lines) + "\n")


def head_of_container_file(directory: Path, name: str, max_bytes: int) -> bytes:
    """The first `max_bytes` of the file `name` a container wrote in `directory`, b"" if none.
    A symlink (even to a host file), a FIFO, a device or a directory there is ignored as if
    absent, and never opened."""
    try:
        return safe_files.read_bounded(directory, name, max_bytes)
    except (FileNotFoundError, safe_files.UnsafeFile):
        return b""


def remove(job: JobIdentity) -> None:
    safe_files.remove_tree(job_root(job))


def write_json(path: Path, value) -> None:
    write_text(path, json.dumps(value))


def write_text(path: Path, text: str) -> None:
    """Written whole or not at all (a crash leaves the old file or none, never half of one)."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    temporary.replace(path)
