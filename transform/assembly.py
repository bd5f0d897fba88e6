"""Writing a payload's answers into `<object>.out` in input order (TransformOutput.AssembleWith).

API reference, TransformOutput.AssembleWith: "To concatenate the results in binary format,
specify None. To add a newline character at the end of every transformed record, specify Line."
Developer guide, "Use Batch Transform": "The predictions in an output file are listed in the same
order as the corresponding records in the input file". Requests run concurrently
(MaxConcurrentTransforms) and answer in any order, so answers wait in a reorder buffer keyed by
payload sequence until every earlier one is written. The buffer is bounded: the sender asks
`admits(sequence)` before sending, so it never runs more than `window` payloads ahead of the
oldest unanswered one. An answer is bytes or, when it is large, a binary file (at its start),
copied in chunks and closed once written."""
from collections.abc import Callable
from typing import BinaryIO

COPY_BYTES = 1 << 20


class OrderedOutput:
    def __init__(self, write: Callable[[bytes], object], assemble_with: str | None, window: int):
        if window < 1:
            raise ValueError("the reorder window holds at least one answer")
        self._write = write
        self._line = assemble_with == "Line"
        self._window = window
        self._next = 0
        self._waiting: dict[int, bytes | BinaryIO] = {}

    def admits(self, sequence: int) -> bool:
        """Whether the answer to payload `sequence` would fit in the buffer."""
        return sequence < self._next + self._window

    def put(self, sequence: int, answer: bytes | BinaryIO) -> None:
        """Accept one payload's answer; write it and every answer it was holding back."""
        if sequence < self._next or sequence in self._waiting:
            raise ValueError(f"payload {sequence} was already answered")
        if not self.admits(sequence):
            raise ValueError(f"payload {sequence} is beyond the reorder window")
        self._waiting[sequence] = answer
        while self._next in self._waiting:
            self._emit(self._waiting.pop(self._next))
            self._next += 1

    @property
    def written(self) -> int:
        """How many payloads' answers are written: the next one written is this sequence."""
        return self._next

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _emit(self, answer: bytes | BinaryIO) -> None:
        if isinstance(answer, bytes):
            self._write(answer)
        else:
            with answer:
                while chunk := answer.read(COPY_BYTES):
                    self._write(chunk)
        if self._line:
            self._write(b"\n")
