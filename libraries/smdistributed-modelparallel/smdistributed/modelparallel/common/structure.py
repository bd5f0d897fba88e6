"""How smp.step is applied, and its argument and output structures, the same for every framework
(each variant's step.py supplies only how a tensor is split and what an output leaf becomes).

A container is a dict, a named tuple, a list, a tuple, a set or a frozenset whose type has no
`smp_slice`; anything else is a leaf. `map_leaves` rebuilds a structure with its leaves replaced
(how smp.step splits an argument into a microbatch); `merge_microbatches` turns the per-microbatch
outputs of one structure into one structure whose tensor leaves hold every microbatch's version.
"""


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


def microbatch_arguments(bound, num_mb, non_split, split_value):
    """Every microbatch's arguments, one {name: value} a microbatch, from `bound` (the call's
    BoundArguments): a parameter in `non_split` is passed whole to every microbatch, any other is
    `split_value(name, value, mb)`. All of them are built before any microbatch runs, so that a
    bad input fails before any work."""
    per_mb = [{} for _ in range(num_mb)]
    for name, value in bound.arguments.items():
        for mb in range(num_mb):
            per_mb[mb][name] = value if name in non_split else split_value(name, value, mb)
    return per_mb


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
