"""The JSONPath subset SageMaker's DataProcessing filters take, and the checks SageMaker makes.

Developer guide, "Associate Prediction Results with Input Records", "Supported JSONPath
Operators": `$` (required first), `.<name>`, `*`, `['<name>'(,'<name>')]`,
`[<number>(,<number>)]` (negative counts from the end), `[<start>:<end>]` (either bound may be
omitted); "additional nesting of children within brackets is not supported", and "for CSV data,
each row is taken as a JSON array, so only index based JSONPaths can be applied". The same page
says of slices: "The colon (:) tells SageMaker to include all of the elements between two values,
inclusive. For example, $[1:4] specifies the second through fifth columns", so the end is
inclusive here (its table's mention of JavaScript's slice() says otherwise; the worked examples
win). API reference, DataProcessing.OutputFilter: indexes outside the data's size are an error.

Two checks, at the times SageMaker makes them:
- `filter_problem` at CreateTransformJob: every character must be a letter, a digit or one of the
  operators allowed for the data's content type. The wording is SageMaker's ValidationException
  (aws/aws-sdk issue 184): `Invalid OutputFilter: "$['account_id','SageMakerOutput']". Unexpected
  "_" in JsonPath. Supported operators for "application/jsonlines" are ['$', '[', ']', '*', '.',
  ' ', ',', ':', '-', ''']`.
- `compile_path` when the job reads an object: the grammar. SageMaker fails the object with
  `Invalid JsonPath: $[0:2,246:]: only single range filters of format (eg: [1:5]) are supported.
  Format [0:2,246:] is not supported` (sagemaker-python-sdk issue 1112)."""
import re
from dataclasses import dataclass

from transform.errors import ObjectFailed

JSON_OPERATORS = ("$", "[", "]", "*", ".", " ", ",", ":", "-", "'")
# Index-only paths for CSV (the guide's rule above); SageMaker's own list for text/csv is not
# published, so this is that rule written as characters.
CSV_OPERATORS = ("$", "[", "]", " ", ",", ":", "-")
ROOT = "$"

_NAME = re.compile(r"[A-Za-z0-9]+")
_QUOTED_NAME = re.compile(r"\s*'([A-Za-z0-9]+)'\s*")
_INDEX = re.compile(r"\s*(-?\d+)\s*")
_SLICE = re.compile(r"\s*(-?\d+)?\s*:\s*(-?\d+)?\s*")


def is_csv(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == "text/csv"


def filter_problem(member: str, path: str | None, content_type: str | None) -> str | None:
    """The CreateTransformJob ValidationException message for DataProcessing's `member`
    (InputFilter, checked against TransformInput.ContentType; OutputFilter, against
    TransformOutput.Accept), or None when every character is allowed."""
    allowed = CSV_OPERATORS if is_csv(content_type) else JSON_OPERATORS
    for character in path or "":
        if not (character.isascii() and character.isalnum()) and character not in allowed:
            operators = ", ".join(f"'{operator}'" for operator in allowed)
            return (
                f'Invalid {member}: "{path}". Unexpected "{character}" in JsonPath. '
                f'Supported operators for "{content_type or ""}" are [{operators}]'
            )
    return None


@dataclass(frozen=True)
class Slice:
    start: int | None
    end: int | None  # inclusive


@dataclass(frozen=True)
class Names:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Indexes:
    selectors: tuple[int | Slice, ...]


Step = Names | Wildcard | Indexes


@dataclass(frozen=True)
class JsonPath:
    text: str
    steps: tuple[Step, ...]

    @property
    def is_root(self) -> bool:
        return not self.steps


def compile_path(text: str | None) -> JsonPath:
    """The parsed path; empty or absent is `$` (the API's default). A path outside the subset
    fails the object with SageMaker's `Invalid JsonPath: <path>: <why>`."""
    text = text or ROOT
    if not text.startswith(ROOT):
        raise _invalid(text, "a path must begin with $")
    steps, position = [], 1
    while position < len(text):
        step, position = _step(text, position)
        steps.append(step)
    return JsonPath(text, tuple(steps))


def _step(text: str, position: int) -> tuple[Step, int]:
    if text.startswith(".[", position):
        position += 1  # `$.field1.['child1','child2']` is in the guide's examples
    if text.startswith("[", position):
        close = text.find("]", position)
        if close < 0:
            raise _invalid(text, "unclosed [")
        return _bracket(text, text[position + 1 : close]), close + 1
    if not text.startswith(".", position):
        raise _invalid(text, f"unexpected {text[position]!r} at position {position}")
    if text.startswith("*", position + 1):
        return Wildcard(), position + 2
    name = _NAME.match(text, position + 1)
    if not name:
        raise _invalid(text, f"expected a name after '.' at position {position}")
    return Names((name.group(),)), name.end()


def _bracket(text: str, inside: str) -> Step:
    if inside.strip() == "*":
        return Wildcard()
    parts = inside.split(",")
    if all(_QUOTED_NAME.fullmatch(part) for part in parts):
        return Names(tuple(_QUOTED_NAME.fullmatch(part).group(1) for part in parts))
    selectors = tuple(_selector(text, part) for part in parts)
    if sum(isinstance(selector, Slice) for selector in selectors) > 1:
        supported = "only single range filters of format (eg: [1:5]) are supported"
        raise _invalid(text, f"{supported}. Format [{inside}] is not supported")
    return Indexes(selectors)


def _selector(text: str, part: str) -> int | Slice:
    if index := _INDEX.fullmatch(part):
        return int(index.group(1))
    if bounds := _SLICE.fullmatch(part):
        start, end = bounds.groups()
        return Slice(None if start is None else int(start), None if end is None else int(end))
    raise _invalid(text, f"unsupported selector [{part}]")


def _invalid(text: str, why: str) -> ObjectFailed:
    return ObjectFailed(f"Invalid JsonPath: {text}: {why}")


def select(path: JsonPath, document):
    """What `path` picks out of `document` (parsed JSON, or a CSV row as a list of strings).
    A path whose every step picks one value gives that value; a wildcard, several indexes or a
    slice give the list of what they picked; several names give an object of those members."""
    values, single = [document], True
    for step in path.steps:
        picked = [_apply(path, step, value) for value in values]
        values = [item for items, _ in picked for item in items]
        single = single and all(one for _, one in picked)
    return values[0] if single else values


def _apply(path: JsonPath, step: Step, value) -> tuple[list, bool]:
    if isinstance(step, Wildcard):
        if isinstance(value, dict):
            return list(value.values()), False
        if isinstance(value, list):
            return list(value), False
        raise _unmatched(path, "* needs an object or an array")
    if isinstance(step, Names):
        if not isinstance(value, dict):
            raise _unmatched(path, f"{', '.join(step.names)} needs an object")
        if len(step.names) == 1:
            return [_member(path, value, step.names[0])], True
        return [{name: _member(path, value, name) for name in step.names}], True
    if not isinstance(value, list):
        raise _unmatched(path, "an index needs an array")
    if len(step.selectors) == 1 and isinstance(step.selectors[0], int):
        return [value[_position(path, step.selectors[0], len(value))]], True
    return [item for selector in step.selectors for item in _selected(path, selector, value)], False


def _member(path: JsonPath, value: dict, name: str):
    if name not in value:
        raise _unmatched(path, f"the record has no attribute {name!r}")
    return value[name]


def _selected(path: JsonPath, selector: int | Slice, value: list) -> list:
    if isinstance(selector, int):
        return [value[_position(path, selector, len(value))]]
    start = 0 if selector.start is None else _position(path, selector.start, len(value))
    end = len(value) - 1 if selector.end is None else _position(path, selector.end, len(value))
    return value[start : end + 1]


def _position(path: JsonPath, index: int, size: int) -> int:
    resolved = index + size if index < 0 else index
    if not 0 <= resolved < size:
        raise _unmatched(path, f"index {index} is outside the {size} elements of the data")
    return resolved


def _unmatched(path: JsonPath, why: str) -> ObjectFailed:
    return ObjectFailed(f"JsonPath {path.text} does not apply to a record: {why}")
