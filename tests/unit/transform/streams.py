"""Byte streams for the transform data-path tests: short reads, and a count of what was read."""
import io


class TrickleStream(io.RawIOBase):
    """Hands out at most `step` bytes per read, as a network body may, and counts bytes read."""

    def __init__(self, data: bytes, step: int = 3):
        self._data = memoryview(data)
        self._step = step
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self._step if size < 0 else min(size, self._step)
        chunk = bytes(self._data[self.consumed : self.consumed + size])
        self.consumed += len(chunk)
        return chunk
