"""The argument and output structures of smp.step, walked the same way for every framework.

A container is a dict, a named tuple, a list, a tuple, a set or a frozenset whose type has no
`smp_slice`; anything else is a leaf. `map_leaves` rebuilds a structure with its leaves replaced
(how smp.step splits an argument into a microbatch); `merge_microbatches` turns the per-microbatch
outputs of one structure into one structure whose tensor leaves hold every microbatch's version.
"""


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


def merge_microbatches(outputs, is_tensor, wrap, path=()):
    """One structure like outputs[0]: a tensor leaf becomes wrap(versions, path) over the
    microbatches, any other leaf (and a set) is the last microbatch's value. Structures that
    differ between microbatches raise ValueError."""
    first = outputs[0]
    if is_tensor(first):
        _check_all(outputs, is_tensor)
        return wrap(list(outputs), path)
    if isinstance(first, dict):
        _check_all(outputs, lambda o: isinstance(o, dict))
        if any(o.keys() != first.keys() for o in outputs):
            raise ValueError("the smp.step function returned dicts with different keys in different "
                             "microbatches")
        return type(first)((k, merge_microbatches([o[k] for o in outputs], is_tensor, wrap, (*path, k)))
                           for k in first)
    if isinstance(first, (list, tuple)):
        _check_all(outputs, lambda o: isinstance(o, (list, tuple)))
        if any(len(o) != len(first) for o in outputs):
            raise ValueError("the smp.step function returned sequences of different lengths in different "
                             "microbatches")
        items = [merge_microbatches(list(column), is_tensor, wrap, (*path, i))
                 for i, column in enumerate(zip(*outputs, strict=True))]
        return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)
    return outputs[-1]


def check_parameter_names(signature, what, names):
    unknown = [n for n in names if n not in signature.parameters]
    if unknown:
        raise ValueError(f"{what} names {unknown}, which are not parameters of the smp.step function "
                         f"{list(signature.parameters)}")


def _check_all(outputs, matches):
    if not all(matches(o) for o in outputs):
        raise ValueError("the smp.step function returned outputs of different types in different "
                         "microbatches")
