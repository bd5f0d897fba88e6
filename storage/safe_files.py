"""Host-side access to trees a container controls, and paths that must stay inside a directory.

A container is hostile. Whatever it wrote under a directory it can write to (/opt/ml/model,
/opt/ml/output, its checkpoints) may be a symlink to a host file, a directory swapped for a
symlink between our listing and our open, a FIFO that blocks a reader forever, or a device node
whose mere opening has effects. So, from the host:

- every path below a root is walked one component at a time, each directory opened relative to
  its parent's descriptor with O_NOFOLLOW | O_DIRECTORY: a symlink anywhere on the way is an
  error, never followed (the root's own parents are the platform's; the root itself may be the
  container's and is not followed either);
- a file is opened first with O_PATH (which opens nothing: no FIFO blocks, no device driver
  runs), checked to be a regular file by fstat, and only then reopened for reading through
  /proc/self/fd: the same inode, whatever happens to the name meanwhile;
- reads of container-written content are bounded in bytes.

`contained` is the one check for paths built from untrusted names (S3 keys, tar members)."""
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

FILE, DIRECTORY, SYMLINK = "file", "directory", "symlink"
# Deeper trees are not walked further: recursion and one descriptor per level stay bounded.
MAX_DEPTH = 64
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REFUSED_ERRNOS = (errno.ELOOP, errno.ENOTDIR)  # a symlink or a non-directory where one was walked
_REMOVE_PASSES = 5


class UnsafeFile(Exception):
    """The path reaches a symlink, or something other than a regular file, below the root."""


def contained(relative: str) -> PurePosixPath | None:
    """`relative` as a path that stays inside the directory it is joined to (relative, not
    empty, no `..`); None when it would not."""
    path = PurePosixPath(relative)
    if not relative or path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return path


@dataclass(frozen=True)
class Entry:
    relative: str  # POSIX path below the root
    kind: str  # FILE, DIRECTORY or SYMLINK
    status: os.stat_result  # lstat: a symlink's own
    target: str = ""  # a symlink's target, as written; never resolved


def walk(root: Path) -> list[Entry]:
    """Every regular file, directory and symlink below `root`, sorted by relative path, without
    following any symlink; FIFOs, sockets and devices are left out. Entries that vanish or are
    swapped for a symlink while we look are skipped. Nothing is returned for a missing root or a
    root that is a symlink."""
    entries: list[Entry] = []
    try:
        root_fd = _open_no_link(str(root), _DIRECTORY_FLAGS)
    except (FileNotFoundError, UnsafeFile):
        return entries
    try:
        _walk_below(root_fd, "", 1, entries)
    finally:
        os.close(root_fd)
    return sorted(entries, key=lambda entry: entry.relative)


def _walk_below(dir_fd: int, prefix: str, depth: int, entries: list[Entry]) -> None:
    for name in os.listdir(dir_fd):
        try:
            status = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            kind = _kind(status.st_mode)
            if kind is None:
                continue  # a FIFO, socket or device: never content
            target = os.readlink(name, dir_fd=dir_fd) if kind == SYMLINK else ""
        except OSError:
            continue  # gone, or no longer a symlink, since listed
        entries.append(Entry(prefix + name, kind, status, target))
        if kind == DIRECTORY and depth < MAX_DEPTH:
            try:
                child = _open_no_link(name, _DIRECTORY_FLAGS, dir_fd)
            except (FileNotFoundError, UnsafeFile):
                continue  # gone, or swapped for a symlink since we looked
            try:
                _walk_below(child, f"{prefix}{name}/", depth + 1, entries)
            finally:
                os.close(child)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIRECTORY
    if stat.S_ISLNK(mode):
        return SYMLINK
    return None


def open_regular(root: Path, relative: str) -> BinaryIO:
    """`root/relative` opened for reading, when every component is a real directory and the last
    a regular file. Raises UnsafeFile otherwise, FileNotFoundError when it is absent."""
    parts = PurePosixPath(relative).parts
    if not parts or contained(relative) is None:
        raise UnsafeFile(f"{relative!r} is not a path below {root}")
    with _directory(root, parts[:-1]) as dir_fd:
        path_fd = _open_no_link(parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd)
        try:
            if not stat.S_ISREG(os.fstat(path_fd).st_mode):
                raise UnsafeFile(f"{relative} is not a regular file")
            descriptor = os.open(f"/proc/self/fd/{path_fd}", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            os.close(path_fd)
    return os.fdopen(descriptor, "rb")


def read_bounded(root: Path, relative: str, limit: int) -> bytes:
    """At most the first `limit` bytes of the regular file `root/relative` (see open_regular)."""
    with open_regular(root, relative) as file:
        return file.read(limit)


@contextmanager
def directory(root: Path, relative: str) -> Iterator[int]:
    """A descriptor of the directory `root/relative`, no component followed through a symlink
    (UnsafeFile otherwise): work in a container's tree by `dir_fd` on it, and a directory the
    container swaps for a symlink later still holds what we create, never a host path."""
    path = contained(relative)
    if path is None:
        raise UnsafeFile(f"{relative!r} is not a path below {root}")
    with _directory(root, path.parts) as descriptor:
        yield descriptor


@contextmanager
def _directory(root: Path, parts: tuple[str, ...]) -> Iterator[int]:
    """A descriptor of `root/parts...`, each component opened without following a symlink."""
    descriptor = _open_no_link(str(root), _DIRECTORY_FLAGS)
    try:
        for part in parts:
            child = _open_no_link(part, _DIRECTORY_FLAGS, descriptor)
            os.close(descriptor)
            descriptor = child
        yield descriptor
    finally:
        os.close(descriptor)


def _open_no_link(name: str, flags: int, dir_fd: int | None = None) -> int:
    """os.open with O_NOFOLLOW in `flags`; a symlink or non-directory in the way is UnsafeFile."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as error:
        if error.errno in _REFUSED_ERRNOS:
            raise UnsafeFile(f"a symlink or a non-directory is in the way ({error.strerror})") from None
        raise


def remove_tree(path: Path) -> None:
    """Remove `path` and everything below it, without following symlinks (shutil.rmtree works
    by descriptor). A helper still running (a Pipe feeder between two epochs) may create an
    entry after rmtree listed a directory, which then fails to go: a few passes remove it."""
    for _ in range(_REMOVE_PASSES):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
