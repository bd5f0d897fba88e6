"""The pipeline engine: one smp.step call with partitions (P) > 1.

As in SageMaker's library, the step function runs on every rank, once per microbatch, and
calls the model and `model.backward` itself. Each microbatch's call runs as a coroutine
(coroutine.py) that pauses where it calls the model; the rank's stage then runs the forward and
backward passes of its partition in the order of the `pipeline` schedule (schedule.py):

- forward: stage 0 runs its partition on the microbatch's model input; every other stage
  receives its input activations from the stage before and sends its output on.
- the last stage's output is the model's output: the microbatch's call goes on with it there
  (computing the loss, calling model.backward(loss) or not), and the last stage sends a copy,
  with whether model.backward was called, to the other stages of its MP group. Their calls go
  on with that copy when their schedule reaches the microbatch's backward pass, so that the
  step function returns on every rank, and StepOutputs hold the same values on every rank:
  those of the last stage; only the last stage's tensors carry autograd history.
- backward: the last stage back-propagates the loss (divided by the number of microbatches,
  so that the step's gradient is the batch's mean); every stage sends the gradient of its input
  activations to the stage before, which back-propagates it through its partition.
- the stage before the last needs the output copy and the input gradients at the same point of
  its schedule (the microbatch's backward pass), so the last stage sends it both in one message
  at its own backward pass of the microbatch (also when there is no backward pass, so that
  these messages always go in microbatch order): one message fewer per microbatch, which is
  what pipelining a small model on CPUs is most sensitive to.

Why not torch.distributed.pipelining: its schedules own the loss (a `loss_fn(output, target)`
given to the schedule, called on the last stage only) and return the output on the last stage
only, while SageMaker's API runs arbitrary user code between `model(x)` and
`model.backward(loss)` on every rank, returns what it returns (tensors and Python values) on
every rank, and decides per call whether there is a backward pass at all (evaluation runs the
same decorator). Its stages also need the microbatch shapes ahead of time or an extra shape
exchange. The schedules themselves are small (schedule.py); the engine here drives them.
"""

import contextlib
import threading

import torch
from torch.utils._pytree import tree_leaves, tree_map

from .coroutine import Coroutine
from .schedule import FORWARD, actions
from .state import state
from .transport import ACTIVATION, GRADIENT, OUTPUT, Transport

_thread = threading.local()  # .microbatch: the _Microbatch whose call runs on this thread


def current_microbatch():
    return getattr(_thread, "microbatch", None)


class ForwardRequest:
    """A microbatch's call of the model, paused until the model's output is there."""

    def __init__(self, model, args, kwargs):
        self.model, self.args, self.kwargs = model, args, kwargs
        self.mode = _TorchMode()


class BackwardRequest:
    def __init__(self, model, tensors, grad_tensors):
        self.model, self.tensors, self.grad_tensors = model, tensors, grad_tensors


class _Microbatch:
    def __init__(self, index, call):
        self.index = index
        self._call = call
        self.coroutine = Coroutine(self._main, f"smp-microbatch-{index}")
        self.request = None  # what the call paused with: a Forward/BackwardRequest, None once it ended
        self.modelless = False  # the call ended without calling the model
        self.backward = False  # the call asked for a backward pass
        self.inputs = []  # this stage's received activations that need a gradient
        self.outputs = None  # this stage's output

    def _main(self):
        _thread.microbatch = self
        return self._call()

    def advance(self, reply=None):
        self.request = self.coroutine.resume(reply)
        return self.request


def run_step(calls):
    """Run one zero-argument call per microbatch through the pipeline; their results, in order."""
    engine = _Engine([_Microbatch(index, call) for index, call in enumerate(calls)])
    try:
        for kind, mb in actions(state().config.pipeline, engine.stage, engine.stages, len(calls)):
            (engine.forward if kind == FORWARD else engine.backward)(engine.microbatches[mb])
        engine.transport.finish()
    finally:
        for microbatch in engine.microbatches:
            microbatch.coroutine.close()
    return [microbatch.coroutine.result for microbatch in engine.microbatches]


class _Engine:
    def __init__(self, microbatches):
        current = state()
        self.microbatches = microbatches
        self.ranks = current.mp.ranks  # global ranks of this MP group, by stage
        self.stages = len(self.ranks)
        self.stage = current.mp_rank
        self.last = self.stage == self.stages - 1
        self.device = current.device
        self.transport = Transport()
        self.model = None

    def forward(self, mb):
        request = mb.advance()
        if request is None:
            mb.modelless = True  # the same on every rank: the step function did not use the model
            return
        if not isinstance(request, ForwardRequest):
            raise RuntimeError("model.backward() was called before the model in an smp.step function")
        self._check_model(request.model)
        request.model.partition_for(request.args, request.kwargs)
        args, kwargs = request.args, request.kwargs
        if self.stage > 0:
            message = self.transport.recv(self.ranks[self.stage - 1], ACTIVATION, self.device)
            received = _needing_grad(message["value"], message["grad"])
            mb.inputs = received[1]
            args, kwargs = (received[0],), {}
        with request.mode.applied():
            mb.outputs = request.model.run_stage(args, kwargs)
        if self.last:
            self._forward_done_last(mb)
        else:
            activations = {"value": mb.outputs, "grad": _grad_flags(mb.outputs)}
            self.transport.send(activations, self.ranks[self.stage + 1], ACTIVATION)

    def _forward_done_last(self, mb):
        request = mb.advance(mb.outputs)  # the step function goes on with the model's output
        mb.backward = isinstance(request, BackwardRequest)
        if request is not None and not mb.backward:
            raise RuntimeError(_ONCE)
        for rank in self.ranks[:-2]:  # the stage before the last gets it at the backward pass
            self.transport.send({"output": mb.outputs, "backward": mb.backward}, rank, OUTPUT)

    def backward(self, mb):
        if mb.modelless:
            return
        if self.last:
            self._backward_last(mb)
        else:
            self._backward_inner(mb)

    def _backward_last(self, mb):
        message = {"output": mb.outputs, "backward": mb.backward}
        if mb.backward:
            request = mb.request
            divisor = request.model.gradient_divisor(len(self.microbatches))
            divided_backward(request.tensors, request.grad_tensors, divisor)
            message["gradients"] = _input_gradients(mb)
        self.transport.send(message, self.ranks[-2], OUTPUT)
        mb.inputs, mb.outputs = [], None
        if mb.backward:
            self._finish(mb)

    def _backward_inner(self, mb):
        message = self.transport.recv(self.ranks[-1], OUTPUT, self.device)
        request = mb.advance(message["output"])  # this rank's step function goes on with a copy of the output
        if request is not None and not isinstance(request, BackwardRequest):
            raise RuntimeError(_ONCE)
        if message["backward"] != isinstance(request, BackwardRequest):
            raise RuntimeError(
                f"microbatch {mb.index}: the last stage {'did' if message['backward'] else 'did not'} call "
                f"model.backward() but this stage (mp_rank {self.stage}) "
                f"{'did not' if message['backward'] else 'did'}: the smp.step function must do the same on "
                "every rank"
            )
        if message["backward"]:
            gradients = (message["gradients"] if self.stage == self.stages - 2
                         else self.transport.recv(self.ranks[self.stage + 1], GRADIENT, self.device))
            outputs = [t for t in tree_leaves(mb.outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
            torch.autograd.backward(outputs, gradients)
            if self.stage > 0:
                self.transport.send(_input_gradients(mb), self.ranks[self.stage - 1], GRADIENT)
            self._finish(mb)
        mb.inputs, mb.outputs = [], None

    @staticmethod
    def _finish(mb):
        if mb.advance() is not None:
            raise RuntimeError(_ONCE)

    def _check_model(self, model):
        if self.model is None:
            self.model = model
        elif model is not self.model:
            raise RuntimeError("an smp.step function may use only one DistributedModel")


def _input_gradients(mb):
    """The gradients of the activations this stage received for `mb`, for the stage before."""
    return [t.grad if t.grad is not None else torch.zeros_like(t) for t in mb.inputs]


def divided_backward(tensors, grad_tensors, divisor):
    """torch.autograd.backward(tensors, grad_tensors) of the tensors divided by `divisor`."""
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if grad_tensors is None:
        torch.autograd.backward([t / divisor for t in tensors])
    else:
        grads = list(grad_tensors) if isinstance(grad_tensors, (list, tuple)) else [grad_tensors]
        torch.autograd.backward(tensors, [g / divisor for g in grads])


_ONCE = ("with partitions > 1, the smp.step function must call the DistributedModel once and "
         "model.backward() at most once per microbatch, the model first")


def _grad_flags(value):
    return [isinstance(t, torch.Tensor) and t.requires_grad for t in tree_leaves(value)]


def _needing_grad(value, flags):
    """The received value with its tensors that needed a gradient as leaves that need one, and those."""
    leaves, position = [], iter(flags)

    def mark(leaf):
        if next(position) and isinstance(leaf, torch.Tensor):
            leaf.requires_grad_(True)
            leaves.append(leaf)
        return leaf

    return tree_map(mark, value), leaves


class _TorchMode:
    """The per-thread grad mode and autocast state of the call that asked for a forward pass,
    applied when the stage runs it on the engine's thread."""

    def __init__(self):
        self.grad_enabled = torch.is_grad_enabled()
        self.autocast = {device: _autocast_state(device) for device in _autocast_devices()}

    @contextlib.contextmanager
    def applied(self):
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.set_grad_enabled(self.grad_enabled))
            for device, (enabled, dtype) in self.autocast.items():
                if enabled or _autocast_state(device)[0]:
                    stack.enter_context(torch.autocast(device, dtype=dtype, enabled=enabled))
            yield


def _autocast_devices():
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


def _autocast_state(device):
    """(enabled, dtype) of autocast on `device` in this thread; torch < 2.4 has one call per device."""
    if hasattr(torch, "get_autocast_dtype"):
        return torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)
    if device == "cpu":
        return torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()
    return torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
