"""Gzipped tar archives of model directories: packing training output, unpacking ModelDataUrl.

Both directions treat the content as untrusted: packing never follows a symlink the algorithm
left (it would read host files), and extracting refuses any member that could land outside the
destination."""
import shutil
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

# Packing is the slow step of a job's end (1 GiB: tar czf 37 s, pigz 15 s, tar alone 1 s), so a
# moderate level and, when the host has it, pigz's parallel compression.
_COMPRESS_LEVEL = 3
_PIGZ = shutil.which("pigz")


class ArchiveError(Exception):
    """The archive is unreadable or has a member that must not be extracted."""


def pack_tar_gz(sources: list[Path], dest: Path, use_pigz: bool = True) -> int:
    """Pack the files of every directory in `sources` into one `dest` tar.gz, each named by its
    path relative to its source root. On a clash the later source wins. Members are sorted, so
    the same inputs give the same member list. Returns the number of members."""
    members = _collect_members(sources)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if use_pigz and _PIGZ:
        with dest.open("wb") as out:
            pigz = subprocess.Popen([_PIGZ, f"-{_COMPRESS_LEVEL}"], stdin=subprocess.PIPE, stdout=out)
            try:
                with tarfile.open(fileobj=pigz.stdin, mode="w|") as archive:
                    _add_members(archive, members)
            finally:
                pigz.stdin.close()
                returncode = pigz.wait()
        if returncode != 0:
            raise ArchiveError(f"pigz failed with exit status {returncode} while packing {dest}")
    else:
        with tarfile.open(dest, mode="w:gz", compresslevel=_COMPRESS_LEVEL) as archive:
            _add_members(archive, members)
    return len(members)


def _collect_members(sources: list[Path]) -> dict[str, Path]:
    members: dict[str, Path] = {}
    for root in sources:
        for path in sorted(root.rglob("*")):
            members[path.relative_to(root).as_posix()] = path
    return dict(sorted(members.items()))


def _add_members(archive: tarfile.TarFile, members: dict[str, Path]) -> None:
    for name, path in members.items():
        # `recursive=False`: directories are listed member by member; links are stored as links.
        archive.add(path, arcname=name, recursive=False)


def safe_extract(archive: Path, dest: Path) -> int:
    """Extract the tar (gzipped or not) `archive` into `dest`; returns the number of members.

    Refuses, naming the member, absolute paths, `..`, links whose target leaves `dest`, and
    device or fifo files. Checked before anything is written."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = tar.getmembers()
            for member in members:
                _check_member(member)
            # The "data" filter re-checks each member against the real paths on disk, which also
            # catches links chained through links extracted earlier.
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ArchiveError(f"Could not extract {archive.name}: {error}") from None
    return len(members)


def _check_member(member: tarfile.TarInfo) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise ArchiveError(f"Refusing archive member {member.name!r}: its path leaves the destination")
    if member.isdev() or member.isfifo():
        raise ArchiveError(f"Refusing archive member {member.name!r}: device and fifo files are not allowed")
    if member.issym() or member.islnk():
        # A symlink's target is relative to its own directory; a hard link's to the archive root.
        base = name.parent if member.issym() else PurePosixPath()
        target = PurePosixPath(member.linkname)
        if target.is_absolute() or _escapes(base / target):
            raise ArchiveError(
                f"Refusing archive member {member.name!r}: "
                f"it links to {member.linkname!r}, outside the destination"
            )


def _escapes(path: PurePosixPath) -> bool:
    """Whether a relative path climbs above its root at any point (`a/../../b`)."""
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False
