"""Property paths as pipeline definitions write them: `ModelArtifacts.S3ModelArtifacts`,
`ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri`, `FinalMetricDataList[0].Value`, and the
JSON paths of `Std:JsonGet` (`metrics.accuracy.value`, `scores[0]`). Pure Python.

A string index on a list picks the item that names itself so (SageMaker's PropertiesList: the
processing output whose OutputName, the metric whose MetricName, the channel whose ChannelName
it is)."""

import re

from botocore.model import ListShape, MapShape, Shape, StructureShape

_TOKEN = re.compile(r"""\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]""")


class PathError(ValueError):
    pass


def tokens(path: str) -> list[str | int]:
    """The members and indices of `path`, in order; PathError when it is not one."""
    found: list[str | int] = []
    position = 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None or (position == 0 and match.group(0).startswith(".")):
            raise PathError(f"'{path}' is not a property path (at character {position + 1})")
        member, number, quoted, double_quoted = match.groups()
        if number is not None:
            found.append(int(number))
        else:
            found.append(member if member is not None else quoted if quoted is not None else double_quoted)
        position = match.end()
    if not found:
        raise PathError("the property path is empty")
    return found


def lookup(value: object, path: str) -> object:
    """The value at `path` inside `value` (a Describe answer, a JSON document)."""
    for token in tokens(path):
        value = _index(value, token, path)
    return value


def _index(value: object, token: str | int, path: str) -> object:
    if isinstance(token, int):
        if isinstance(value, list) and token < len(value):
            return value[token]
    elif isinstance(value, dict) and token in value:
        return value[token]
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and any(
                key.endswith("Name") and named == token for key, named in item.items()
            ):
                return item
    raise PathError(f"'{path}' has no value at {token!r}")


def shape_problem(shape: Shape, path: str) -> str | None:
    """Why `path` names nothing in a response of `shape` (a botocore output shape), or None."""
    try:
        found = tokens(path)
    except PathError as exc:
        return str(exc)
    for token in found:
        if isinstance(shape, StructureShape) and isinstance(token, str) and token in shape.members:
            shape = shape.members[token]
        elif isinstance(shape, ListShape):
            shape = shape.member
        elif isinstance(shape, MapShape) and isinstance(token, str):
            shape = shape.value
        else:
            return f"'{path}': {shape.name} has no member {token!r}"
    return None
