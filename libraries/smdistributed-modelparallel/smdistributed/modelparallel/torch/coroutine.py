"""A function run as a coroutine on its own thread, so that the pipeline can pause one
microbatch's step function where it calls the model and run other microbatches meanwhile.

Exactly one of the caller and its coroutines runs at any time (each hands control over and
waits), so the order of everything they do is fixed by the caller. A coroutine thread starts
in the caller's grad mode and on its CUDA device, which are per-thread in PyTorch.
"""

import threading

import torch


class Cancelled(BaseException):
    """Raised inside a paused coroutine that its caller closes."""


class Coroutine:
    def __init__(self, function, name):
        self._function = function
        self._name = name
        self._thread = None
        self._turn = threading.Condition()
        self._running = False  # whose turn: the coroutine's (True) or the caller's (False)
        self._message = None  # what the coroutine handed over, or the caller's reply
        self._cancelled = False
        self.finished = False
        self.result = None
        self.error = None

    def resume(self, reply=None):
        """Run the coroutine until it pauses or ends; what it paused with (None once it ended)."""
        with self._turn:
            self._message = reply
            self._running = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, args=(_CallerMode(),), name=self._name,
                                                daemon=True)
                self._thread.start()
            else:
                self._turn.notify_all()
            self._turn.wait_for(lambda: not self._running)
            if self.error is not None:
                raise self.error
            return None if self.finished else self._message

    def pause(self, message):
        """Inside the coroutine: hand `message` to the caller and wait for its reply."""
        with self._turn:
            self._message = message
            self._running = False
            self._turn.notify_all()
            self._turn.wait_for(lambda: self._running)
            if self._cancelled:
                raise Cancelled()
            return self._message

    def close(self):
        """End a paused coroutine (its function sees Cancelled) and wait for its thread."""
        if self._thread is None or self.finished:
            return
        with self._turn:
            self._cancelled = True
            self._running = True
            self._turn.notify_all()
            self._turn.wait_for(lambda: not self._running)

    def _main(self, mode):
        mode.apply()
        try:
            self.result = self._function()
        except Cancelled:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
            self.error = exc
        with self._turn:
            self.finished = True
            self._running = False
            self._turn.notify_all()


class _CallerMode:
    """The calling thread's per-thread torch state, applied in the coroutine's thread."""

    def __init__(self):
        self.grad_enabled = torch.is_grad_enabled()
        self.device = torch.cuda.current_device() if torch.cuda.is_available() else None

    def apply(self):
        torch.set_grad_enabled(self.grad_enabled)
        if self.device is not None:
            torch.cuda.set_device(self.device)
