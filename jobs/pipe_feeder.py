"""Pipe mode: an input's S3 objects streamed into the FIFOs `<name>_<epoch>` of a directory: a
training channel's `/opt/ml/input/data/<channel>_<epoch>` (training/sidecars.py), a processing
input's `<LocalPath>_<epoch>` (processing/pipes.py).

One feeder per host and Pipe input runs as a helper process (`jobs/sidecars.py`) while the
job runs; inputs are independent, so the container may read them in any order or at once.
Epoch N is the host's objects concatenated in key order (each decompressed first when the
input says Gzip), written into the FIFO `<name>_N`.
Once the algorithm has read it to EOF, or closed it early (the next write fails with EPIPE),
the FIFO is removed and `<channel>_{N+1}` appears, and so on for as long as the job runs. The
bytes go from S3 into the pipe in chunks: nothing is staged on disk.

The feeder never blocks on a FIFO that nobody will open: it waits for the reader with
non-blocking opens and exits once the FIFO is gone (the job ended and its workspace was
removed). A write blocks only while a reader holds the FIFO open, and a reader that dies with
its container turns that write into EPIPE. The job's end does not wait for the feeder either:
the reconciler stops it.

Restart: the epoch whose writing began is recorded (`<name>.epoch`). A feeder started again
(it died, or the machine restarted) continues with the next epoch: the algorithm saw the
interrupted epoch end early at EOF and is waiting for the next FIFO anyway. (A feeder that dies
in the instant between the reader's open and that record serves the same epoch again, which
that reader, having seen EOF, no longer opens: a window of microseconds, accepted.)"""
import errno
import logging
import os
import stat
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from jobs import sidecars
from storage import s3, safe_files

log = logging.getLogger(__name__)

MODULE = "jobs.pipe_feeder"
READER_POLL_SECONDS = 0.1
FIFO_MODE = 0o644  # readable by an algorithm that runs as another user than root
_READ_ATTEMPTS = 4  # per object, resuming at the byte where the stream broke
_RETRY_PAUSE_SECONDS = 1.0
_GZIP_WBITS = zlib.MAX_WBITS | 16  # gzip header and trailer, not a raw zlib stream
_TRAINING_DATA_DIR = "/opt/ml/input/data"  # where specs written before `container_dir` fed


@dataclass(frozen=True)
class Fifo:
    """What the container sees: FIFOs `<container_dir>/<name>_<epoch>`; `gunzip`: the objects are
    gzip and the container reads them inflated."""

    container_dir: str
    name: str
    gunzip: bool


def define(directory: Path, name: str, fifo_dir: Path, fifo: Fifo, objects: list[tuple[str, str]]) -> None:
    """Declare the feeder `name` (its helper files in `directory`) of one host's input, whose
    FIFOs are `fifo_dir/<fifo.name>_<epoch>`; `objects` are (bucket, key) in key order."""
    sidecars.define(directory, name, MODULE, {
        "fifo_dir": str(fifo_dir),
        "container_dir": fifo.container_dir,
        "channel": fifo.name,  # the key's name from when only training channels had pipes
        "gunzip": fifo.gunzip,
        "objects": [list(item) for item in objects],
        "epoch_file": str(directory / f"{name}.epoch"),
    })


def feed(spec: dict) -> None:
    """Serve epoch after epoch until the FIFO directory is gone."""
    fifo_dir, channel = Path(spec["fifo_dir"]), spec["channel"]
    # The FIFO directory's parent may be writable in the container (/opt/ml/input for training):
    # the container may replace the directory with a symlink to a host directory at any moment.
    # So the directory is opened once, without following links (its parent, the mount point,
    # cannot be replaced from inside), and every FIFO is created, opened
    # and removed relative to that descriptor: whatever the container renames, what we touch
    # stays inside its own tree.
    try:
        with safe_files.directory(fifo_dir.parent, fifo_dir.name) as directory:
            _serve(directory, channel, Path(spec["epoch_file"]), spec)
    except FileNotFoundError:
        log.info("%s is gone: the job ended", fifo_dir)
    except safe_files.UnsafeFile:
        replaced = spec.get("container_dir", _TRAINING_DATA_DIR)
        raise sidecars.HelperFailed(f"ClientError: {replaced} was replaced by a link") from None


def _serve(directory: int, channel: str, epoch_file: Path, spec: dict) -> None:
    epoch = first_epoch(epoch_file)
    if epoch:  # left by a feeder that died mid-epoch
        _remove(directory, f"{channel}_{epoch - 1}")
    while True:
        fifo = f"{channel}_{epoch}"
        descriptor = _open_when_read(directory, fifo)
        if descriptor is None:
            log.info("%s is gone: the job ended", fifo)
            return
        sidecars.write_atomically(epoch_file, str(epoch))
        try:
            complete = _write_epoch(descriptor, spec, channel)
        finally:
            os.close(descriptor)
        _remove(directory, fifo)
        log.info("%s: epoch %d %s", channel, epoch, "served" if complete else "closed early by the algorithm")
        epoch += 1


def first_epoch(epoch_file: Path) -> int:
    """The epoch to serve first: 0, or the one after the last epoch whose writing began."""
    try:
        return int(epoch_file.read_text()) + 1
    except (FileNotFoundError, ValueError):
        return 0


def _remove(directory: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass


def _open_when_read(directory: int, fifo: str) -> int | None:
    """Create the FIFO in `directory` and wait until the algorithm opens it; the write end, or
    None once the directory is gone. Only a FIFO is ever opened, never through a symlink
    (O_NOFOLLOW, then checked on the descriptor), so nothing planted in its place is written to."""
    try:
        _make_fifo(directory, fifo)
    except FileExistsError:
        if not stat.S_ISFIFO(os.stat(fifo, dir_fd=directory, follow_symlinks=False).st_mode):
            raise _not_a_pipe(fifo) from None
    except FileNotFoundError:
        return None
    while True:
        try:
            flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            descriptor = os.open(fifo, flags, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise _not_a_pipe(fifo) from None
            if error.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            time.sleep(READER_POLL_SECONDS)
            continue
        if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise _not_a_pipe(fifo)
        os.set_blocking(descriptor, True)  # from now on, write at the reader's pace
        return descriptor


def _make_fifo(directory: int, fifo: str) -> None:
    """mkfifo with exactly FIFO_MODE: the umask is cleared for the call (a chmod afterwards would
    go by name, and the name may be a link by then)."""
    previous = os.umask(0)
    try:
        os.mkfifo(fifo, FIFO_MODE, dir_fd=directory)
    finally:
        os.umask(previous)


def _not_a_pipe(fifo: str) -> sidecars.HelperFailed:
    return sidecars.HelperFailed(f"ClientError: {fifo} in the input data directory is not a pipe")


def _write_epoch(descriptor: int, spec: dict, channel: str) -> bool:
    """Write every object into the pipe; False when the reader closed it before the end."""
    try:
        for bucket, key in spec["objects"]:
            _write_object(descriptor, bucket, key, channel, _Gunzip() if spec["gunzip"] else None)
    except BrokenPipeError:
        return False
    return True


def _write_object(descriptor: int, bucket: str, key: str, channel: str, gunzip: "_Gunzip | None") -> None:
    offset = 0
    for attempt in range(1, _READ_ATTEMPTS + 1):
        try:
            for chunk in s3.iter_object(bucket, key, offset):
                offset += len(chunk)
                _write_all(descriptor, gunzip.decompress(chunk, key) if gunzip else chunk)
            return
        except s3.StorageError as error:
            if attempt == _READ_ATTEMPTS:
                reason = f"ClientError: could not stream channel '{channel}': {error}"
                raise sidecars.HelperFailed(reason) from None
            log.warning("%s; resuming at byte %d", error, offset)
            time.sleep(_RETRY_PAUSE_SECONDS * attempt)


class _Gunzip:
    """Streaming gzip decompression of one object; resuming the download at a byte offset
    continues the same stream. Concatenated gzip members are read one after the other."""

    def __init__(self):
        self._decompressor = zlib.decompressobj(_GZIP_WBITS)

    def decompress(self, data: bytes, key: str) -> bytes:
        pieces = []
        try:
            while data:
                pieces.append(self._decompressor.decompress(data))
                if not self._decompressor.eof:
                    break
                data = self._decompressor.unused_data
                self._decompressor = zlib.decompressobj(_GZIP_WBITS)
        except zlib.error as error:
            raise sidecars.HelperFailed(f"ClientError: {key} is not valid gzip data: {error}") from None
        return b"".join(pieces)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


if __name__ == "__main__":
    sidecars.run_helper(feed)
