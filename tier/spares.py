"""Shard files of evicted steps, kept for the next writes to fill again: a new file under /dev/shm
costs its pages' allocation and zeroing, and the unlink of the file it replaces their freeing,
about twice the copy itself (docs/performance.md, "Checkpoint tier"). A spare is reused only
when no reader holds it open (an open reader keeps reading the bytes it opened), and its bytes
count against the node's budget until a write takes it or the budget needs them back.

`spare/` is emptied at start, like `tmp/`. Every method but a reader's close runs under the
store's lock; the open-reader counts have a lock of their own."""

import io
import os
import shutil
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

MAX_SPARE_FILES = 16  # two or three steps of a node's ranks: what retention evicts at a time


class ShardReader(io.BufferedReader):
    """A shard file opened for reading, which says when it is closed."""

    def __init__(self, raw: io.FileIO, on_close: Callable[[], None]):
        super().__init__(raw)
        self._on_close: Callable[[], None] | None = on_close

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._on_close:
                on_close, self._on_close = self._on_close, None
                on_close()


class SparePool:
    def __init__(self, directory: Path):
        self._directory = directory
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)
        self._spares: dict[Path, int] = {}  # spare file → its size
        self._readers: Counter[tuple[int, int]] = Counter()  # (device, inode) → open readers
        self._readers_lock = threading.Lock()

    @property
    def bytes(self) -> int:
        return sum(self._spares.values())

    def open_reader(self, path: Path) -> ShardReader:
        raw = io.FileIO(path, "rb")
        try:
            status = os.fstat(raw.fileno())
        except OSError:
            raw.close()
            raise
        key = (status.st_dev, status.st_ino)
        with self._readers_lock:
            self._readers[key] += 1
        return ShardReader(raw, lambda: self._reader_closed(key))

    def _reader_closed(self, key: tuple[int, int]) -> None:
        with self._readers_lock:
            self._readers[key] -= 1
            if self._readers[key] <= 0:
                del self._readers[key]

    def discard(self, path: Path) -> None:
        """A shard file that is no longer a shard: kept as a spare when no reader holds it and
        there is room, else unlinked."""
        try:
            status = path.stat()
            with self._readers_lock:
                read = self._readers[(status.st_dev, status.st_ino)] > 0
            if read or len(self._spares) >= MAX_SPARE_FILES:
                path.unlink()
                return
            spare = self._directory / f"{status.st_dev}-{status.st_ino}"
            os.replace(path, spare)
            self._spares[spare] = status.st_size
        except FileNotFoundError:
            pass

    def take(self, size: int, destination: Path) -> bool:
        """Move the smallest spare of at least `size` bytes to `destination`; whether one was."""
        fitting = [(spare_size, spare) for spare, spare_size in self._spares.items() if spare_size >= size]
        if not fitting:
            return False
        _, spare = min(fitting)
        del self._spares[spare]
        try:
            os.replace(spare, destination)
        except FileNotFoundError:
            return False
        return True

    def release_one(self) -> bool:
        """Unlink the largest spare (the budget needs its bytes); whether there was one."""
        if not self._spares:
            return False
        spare = max(self._spares, key=self._spares.__getitem__)
        del self._spares[spare]
        spare.unlink(missing_ok=True)
        return True

    def release_all(self) -> None:
        while self.release_one():
            pass
