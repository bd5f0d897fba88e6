"""How smp.step is applied, and its argument and output structures, the same for every framework
(each variant's step.py supplies only how a tensor is split and what an output leaf becomes).

A container is a dict, a named tuple, a list, a tuple, a set or a frozenset whose type has no
`smp_slice`; anything else is a leaf. `map_leaves` rebuilds a structure with its leaves replaced
(how smp.step splits an argument into a microbatch); `merge_microbatches` turns the per-microbatch
outputs of one structure into one structure whose tensor leaves hold every microbatch's version.
"""

import functools
import inspect


def step_arguments(args, non_split_inputs, input_split_axes):
    """How smp.step was applied: (the function, or None when smp.step(...) returns the decorator,
    non_split_inputs, input_split_axes). `@smp.step`, `@smp.step()` and `@smp.step(...)`, whose
    two parameters may also be given positionally."""
    if len(args) == 1 and callable(args[0]) and non_split_inputs is None and input_split_axes is None:
        return args[0], [], {}
    if len(args) > 2:
        raise TypeError("smp.step takes at most two positional arguments: non_split_inputs, input_split_axes")
    if args:
        non_split_inputs = args[0]
    if len(args) == 2:
        input_split_axes = args[1]
    return None, non_split_inputs or [], input_split_axes or {}


class StepFunctionBase:
    """A function decorated by smp.step. A variant adds __call__ (how the microbatches run) and
    split_leaf(value, num_mb, mb, axis, name): microbatch `mb` of a leaf of an argument."""

    def __init__(self, func, non_split_inputs, input_split_axes):
        self._signature = inspect.signature(func)
        check_step_parameters(self._signature, non_split_inputs, input_split_axes)
        self._func = func
        self._non_split = set(non_split_inputs)
        self._axes = dict(input_split_axes)
        functools.update_wrapper(self, func)

    def __get__(self, instance, owner=None):
        """A decorated method receives its instance first, passed to every microbatch unsplit
        (unless the instance is itself a tensor, container or smp_slice object)."""
        return self if instance is None else functools.partial(self, instance)

    def microbatch_arguments(self, bound, num_mb):
        """Every microbatch's arguments, one {name: value} a microbatch, from `bound` (the call's
        BoundArguments): a non_split_inputs parameter is passed whole to every microbatch. All of
        them are built before any microbatch runs, so that a bad input fails before any work."""
        per_mb = [{} for _ in range(num_mb)]
        for name, value in bound.arguments.items():
            for mb in range(num_mb):
                per_mb[mb][name] = value if name in self._non_split else self._split(name, value, mb, num_mb)
        return per_mb

    def call(self, arguments):
        """The decorated function on one microbatch's {name: value} arguments."""
        call = inspect.BoundArguments(self._signature, arguments)
        return self._func(*call.args, **call.kwargs)

    def _split(self, name, value, mb, num_mb):
        axis = self._axes.get(name, 0)
        return map_leaves(value, functools.partial(self.split_leaf, num_mb=num_mb, mb=mb, axis=axis,
                                                   name=name))


def map_leaves(value, leaf):
    if hasattr(value, "smp_slice"):
        return leaf(value)
    if isinstance(value, dict):
        return type(value)((k, map_leaves(v, leaf)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(map_leaves(v, leaf) for v in value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(map_leaves(v, leaf) for v in value)
    return leaf(value)


def merge_microbatches(outputs, is_tensor, wrap, other_leaf, path=()):
    """One structure like outputs[0]: a tensor leaf becomes wrap(versions, path) over the
    microbatches, any other leaf (and a set) other_leaf(its values by microbatch). Structures
    that differ between microbatches raise ValueError."""
    first = outputs[0]
    if is_tensor(first):
        _check_all(outputs, is_tensor)
        return wrap(list(outputs), path)
    if isinstance(first, dict):
        _check_all(outputs, lambda o: isinstance(o, dict))
        if any(o.keys() != first.keys() for o in outputs):
            raise ValueError("the smp.step function returned dicts with different keys in different "
                             "microbatches")
        return type(first)((k, merge_microbatches([o[k] for o in outputs], is_tensor, wrap, other_leaf,
                                                      (*path, k)))
                           for k in first)
    if isinstance(first, (list, tuple)):
        _check_all(outputs, lambda o: isinstance(o, (list, tuple)))
        if any(len(o) != len(first) for o in outputs):
            raise ValueError("the smp.step function returned sequences of different lengths in different "
                             "microbatches")
        items = [merge_microbatches(list(column), is_tensor, wrap, other_leaf, (*path, i))
                 for i, column in enumerate(zip(*outputs, strict=True))]
        return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)
    return other_leaf(list(outputs))


def check_step_parameters(signature, non_split_inputs, input_split_axes):
    """Names of the decorated function's parameters, and integer axes (checked when decorating)."""
    _check_parameter_names(signature, "non_split_inputs", non_split_inputs)
    _check_parameter_names(signature, "input_split_axes", input_split_axes)
    if any(isinstance(a, bool) or not isinstance(a, int) for a in input_split_axes.values()):
        raise TypeError(f"input_split_axes values must be integer axes, got {input_split_axes!r}")


def _check_parameter_names(signature, what, names):
    unknown = [n for n in names if n not in signature.parameters]
    if unknown:
        raise ValueError(f"{what} names {unknown}, which are not parameters of the smp.step function "
                         f"{list(signature.parameters)}")


def _check_all(outputs, matches):
    if not all(matches(o) for o in outputs):
        raise ValueError("the smp.step function returned outputs of different types in different "
                         "microbatches")
