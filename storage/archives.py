"""Gzipped tar archives of model directories: packing training output (streamed to S3 as it is
packed), unpacking ModelDataUrl.

Both directions treat the content as untrusted: packing never follows a symlink the algorithm
left (it would read host files), and extracting refuses any member that could land outside the
destination."""
import os
import stat
import tarfile
from pathlib import Path, PurePosixPath
from typing import Protocol

from isal import igzip_threaded

from storage import safe_files
from storage.upload_stream import upload_stream

# Packing was the slow step of a job's end, bound by gzip (136 MiB of incompressible bytes: zlib at
# level 3 47 MiB/s, pigz -3 on 2 cores 72 MiB/s). ISA-L's igzip writes the same standard gzip at
# 530-570 MiB/s on one core (levels 1-2; 2 compresses text a little better at the same speed), on a
# thread of its own while tar reads the files in the caller's.
_COMPRESS_LEVEL = 2
_CHUNK_BYTES = 1024 * 1024
_MAX_LINK_HOPS = 40  # the kernel's limit on symlinks followed in one lookup (ELOOP)


class ArchiveError(Exception):
    """The archive is unreadable or has a member that must not be extracted."""


class Writable(Protocol):
    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


Members = dict[str, tuple[Path, safe_files.Entry]]


def upload_tar_gz(sources: list[Path], bucket: str, key: str) -> int:
    """Pack `sources` (see `write_tar_gz`) straight into the S3 object bucket/key, uploaded while
    it is packed (no archive on disk); returns the number of members. Nothing is written to S3
    when packing or uploading fails."""
    with upload_stream(bucket, key) as stream:
        return write_tar_gz(sources, stream)


def write_tar_gz(sources: list[Path], out: Writable) -> int:
    """Write one tar.gz of the files of every directory in `sources` to `out`, each named by its
    path relative to its source root. On a clash the later source wins. Members are sorted, so
    the same inputs give the same member list. Returns the number of members. The compression
    thread writes to `out`; an error of `out` (the upload) is raised here at the next write."""
    members = _collect_members(sources)
    with igzip_threaded.open(out, "wb", compresslevel=_COMPRESS_LEVEL, threads=1) as compressed:
        with _tar_stream(compressed) as archive:
            _add_members(archive, members)
    return len(members)


def _tar_stream(out: Writable) -> tarfile.TarFile:
    """A tar written forwards only (no seeking back), copying file bodies in large reads."""
    return tarfile.open(fileobj=out, mode="w|", bufsize=_CHUNK_BYTES, copybufsize=_CHUNK_BYTES)


def _collect_members(sources: list[Path]) -> Members:
    """Name → (source root, entry), walked without following any link (safe_files.walk)."""
    members: Members = {}
    for root in sources:
        for entry in safe_files.walk(root):
            members[entry.relative] = (root, entry)
    return dict(sorted(members.items()))


def _add_members(archive: tarfile.TarFile, members: Members) -> None:
    """Directories and symlinks from what the walk saw (a link is stored as a link, as tar
    does); a regular file from the descriptor it is read through, opened without following a
    link anywhere on its path. What is no longer a regular file by then is left out."""
    for name, (root, entry) in members.items():
        if entry.kind != safe_files.FILE:
            archive.addfile(_header(name, entry.status, entry.kind, entry.target))
            continue
        try:
            body = safe_files.open_regular(root, entry.relative)
        except (FileNotFoundError, safe_files.UnsafeFile):
            continue
        with body:
            archive.addfile(_header(name, os.fstat(body.fileno()), safe_files.FILE), body)


_TAR_TYPES = {
    safe_files.FILE: tarfile.REGTYPE,
    safe_files.DIRECTORY: tarfile.DIRTYPE,
    safe_files.SYMLINK: tarfile.SYMTYPE,
}


def _header(name: str, status: os.stat_result, kind: str, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = _TAR_TYPES[kind], target
    info.mode, info.uid, info.gid = stat.S_IMODE(status.st_mode), status.st_uid, status.st_gid
    info.mtime = int(status.st_mtime)
    info.size = status.st_size if kind == safe_files.FILE else 0
    return info


def safe_extract(archive: Path, dest: Path, max_bytes: int | None = None) -> int:
    """Extract the tar (gzipped or not) `archive` into the empty directory `dest`; returns the
    number of members.

    Refuses, naming the member, absolute paths, `..`, links whose target leaves `dest` (however
    they chain through other links of the archive), and device or fifo files; and an archive
    whose files hold more than `max_bytes` in all. Checked before anything is written.

    A directory member naming the archive's own root (`''`, `.`, `./`, `/`) is no escape: the
    SageMaker SDK's repack writes one (`tarfile.add(model_dir, arcname=os.path.sep)`), and so
    does `tar czf model.tar.gz -C model .`. It is counted and not extracted: `dest` is that
    directory already."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = tar.getmembers()
            _check_members(members, max_bytes)
            below_root = [member for member in members if not _is_root_directory(member)]
            # The "data" filter re-checks each member against the real paths on disk.
            tar.extractall(dest, members=below_root, filter="data")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ArchiveError(f"Could not extract {archive.name}: {error}") from None
    return len(members)


def _check_members(members: list[tarfile.TarInfo], max_bytes: int | None) -> None:
    total = sum(member.size for member in members if member.isfile())
    if max_bytes is not None and total > max_bytes:
        raise ArchiveError(f"its files hold {total} bytes, more than the limit of {max_bytes} bytes")
    # Every symlink the extraction leaves, by name (a later member of the same name writes
    # through it or fails to replace it). No member may be placed through one of them, so each
    # name is where its member lands, and the map is the extracted tree's links.
    links = {PurePosixPath(member.name).as_posix(): member.linkname for member in members if member.issym()}
    for member in members:
        if not _is_root_directory(member):
            _check_member(member, links)


def _is_root_directory(member: tarfile.TarInfo) -> bool:
    """A directory member that names the destination itself. tarfile reads `/` and `//` as `''`
    and `./` as `.`; anything else at the root (a file or a link named `.`) is refused below."""
    return member.isdir() and not PurePosixPath(member.name.lstrip("/")).parts


def _check_member(member: tarfile.TarInfo, links: dict[str, str]) -> None:
    name = safe_files.contained(member.name)
    if name is None:
        raise ArchiveError(f"Refusing archive member {member.name!r}: its path leaves the destination")
    if member.isdev() or member.isfifo():
        raise ArchiveError(f"Refusing archive member {member.name!r}: device and fifo files are not allowed")
    through = next((parent.as_posix() for parent in name.parents if parent.as_posix() in links), None)
    if through is not None:
        raise ArchiveError(
            f"Refusing archive member {member.name!r}: its path goes through the link {through!r}"
        )
    # A symlink's target is relative to its own directory, a hard link's to the archive root;
    # resolved through every link of the archive, it must stay inside.
    if member.issym() or member.islnk():
        target = (name.parent if member.issym() else PurePosixPath()) / member.linkname
        if _Resolver(links).resolve(target) is None:
            raise ArchiveError(
                f"Refusing archive member {member.name!r}: "
                f"it links to {member.linkname!r}, outside the destination"
            )


class _Resolver:
    """Resolves paths (relative to the destination) through the archive's symlinks, as the
    kernel would once all are extracted, following at most _MAX_LINK_HOPS links in all (so a
    loop, or links fanning out into each other, end quickly)."""

    def __init__(self, links: dict[str, str]):
        self.links, self.hops = links, 0

    def resolve(self, path: PurePosixPath) -> list[str] | None:
        """The components of `path` with every link resolved; None when it leaves the
        destination at any point (an absolute target, `..` above the root, too many links)."""
        if path.is_absolute():
            return None
        resolved: list[str] = []
        for part in path.parts:
            if part == "..":
                if not resolved:
                    return None
                resolved.pop()
            elif part != ".":
                resolved.append(part)
                target = self.links.get("/".join(resolved))
                if target is not None:
                    self.hops += 1
                    if self.hops > _MAX_LINK_HOPS:
                        return None
                    through = self.resolve(PurePosixPath(*resolved[:-1], target))
                    if through is None:
                        return None
                    resolved = through
        return resolved
