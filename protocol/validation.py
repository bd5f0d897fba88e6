"""Request validation against the operation's botocore input shape, in AWS's wording.

botocore checks only `required`, `min`, types and member names before sending; the real
service also enforces `max`, full-match patterns and enums. Every problem is collected into
one ValidationException, as AWS does:

    2 validation errors detected: Value 'a_b' at 'trainingJobName' failed to satisfy
    constraint: Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; ...

Member paths are lowerCamel and dotted; list items are `<list>.<n>.member` (1-based)."""

import math
from datetime import UTC, datetime

from botocore.model import Shape, StructureShape

from protocol.errors import ValidationException
from protocol.limits import echo
from protocol.patterns import compile_pattern, display_pattern
from protocol.shapes import operation_model

# JSON 1.1 sends non-finite floats as these strings (botocore's serializer).
_NON_FINITE_FLOATS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
# Problems spelled out in one error (all are counted): a request with thousands of bad members
# gets a readable answer, not one larger than itself.
MAX_LISTED_PROBLEMS = 20
# What Java's Integer and Long hold: a number outside is not of the member's type.
_INTEGER_RANGES = {"integer": range(-(2**31), 2**31), "long": range(-(2**63), 2**63)}


def validate_input(service: str, operation: str, params: dict) -> dict:
    """Check `params` against the input shape of `service` (botocore name) `operation`.

    Returns the params with timestamps as aware UTC datetimes; raises ValidationException
    listing every problem."""
    model = operation_model(service, operation)
    if model is None:
        raise ValueError(f"{service} has no operation {operation}")
    problems: list[str] = []
    shape = model.input_shape
    if shape is None:
        _reject_unknown_members(params, known=(), shape_name=operation, path="", problems=problems)
        cleaned: dict = {}
    else:
        cleaned = _structure(shape, params, "", problems)
    if problems:
        count = len(problems)
        noun = "error" if count == 1 else "errors"
        listed = "; ".join(problems[:MAX_LISTED_PROBLEMS])
        if count > MAX_LISTED_PROBLEMS:
            listed += f"; and {count - MAX_LISTED_PROBLEMS} more"
        raise ValidationException(f"{count} validation {noun} detected: {listed}")
    return cleaned


def _problem(value: object, path: str, constraint: str) -> str:
    return f"Value {_render(value)} at '{path}' failed to satisfy constraint: {constraint}"


def _render(value: object) -> str:
    """A value as AWS quotes it (Java's toString): null bare, everything else in quotes; cut
    short, so that a large value never makes a larger error."""
    return "null" if value is None else f"'{echo(_java_string(value))}'"


def _java_string(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_java_string(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={_java_string(item)}" for key, item in value.items()) + "}"
    return str(value)


def _member_path(parent: str, member: str) -> str:
    name = member[:1].lower() + member[1:]
    return f"{parent}.{name}" if parent else name


def _value(shape: Shape, value: object, path: str, problems: list[str]) -> object:
    if shape.type_name == "structure":
        return _structure(shape, value, path, problems)
    if shape.type_name == "list":
        return _list(shape, value, path, problems)
    if shape.type_name == "map":
        return _map(shape, value, path, problems)
    converted, violations = _scalar(shape, value)
    problems.extend(_problem(value, path, violation) for violation in violations)
    return converted


def _structure(shape: StructureShape, value: object, path: str, problems: list[str]) -> object:
    if not isinstance(value, dict):
        problems.append(_problem(value, path, _type_violation(shape)))
        return value
    cleaned = {}
    required = set(shape.required_members)
    for name, member_shape in shape.members.items():
        member_path = _member_path(path, name)
        # A JSON null is treated as an absent member, as the real service does.
        if value.get(name) is None:
            if name in required:
                problems.append(_problem(None, member_path, "Member must not be null"))
            continue
        cleaned[name] = _value(member_shape, value[name], member_path, problems)
    _reject_unknown_members(value, shape.members, shape.name, path, problems)
    return cleaned


def _reject_unknown_members(value: dict, known, shape_name: str, path: str, problems: list[str]) -> None:
    for name in value:
        if name not in known:
            problems.append(
                _problem(
                    value[name], _member_path(path, name), f"Member is not defined in shape {shape_name}"
                )
            )


def _list(shape: Shape, value: object, path: str, problems: list[str]) -> object:
    if not isinstance(value, list):
        problems.append(_problem(value, path, _type_violation(shape)))
        return value
    problems.extend(_problem(value, path, violation) for violation in _size_violations(shape, len(value)))
    if _is_scalar(shape.member):
        # AWS reports scalar items' violations once, on the list: "Member must satisfy constraint: [...]".
        cleaned, violations = _scalars(shape.member, value)
        if violations:
            problems.append(
                _problem(value, path, f"Member must satisfy constraint: [{', '.join(violations)}]")
            )
        return cleaned
    return [
        _value(shape.member, item, f"{path}.{index}.member", problems)
        for index, item in enumerate(value, start=1)
    ]


def _map(shape: Shape, value: object, path: str, problems: list[str]) -> object:
    if not isinstance(value, dict):
        problems.append(_problem(value, path, _type_violation(shape)))
        return value
    problems.extend(_problem(value, path, violation) for violation in _size_violations(shape, len(value)))
    _, key_violations = _scalars(shape.key, list(value))
    if key_violations:
        problems.append(
            _problem(value, path, f"Map keys must satisfy constraint: [{', '.join(key_violations)}]")
        )
    if not _is_scalar(shape.value):
        return {key: _value(shape.value, item, f"{path}.{key}", problems) for key, item in value.items()}
    cleaned_values, value_violations = _scalars(shape.value, list(value.values()))
    if value_violations:
        constraint = f"Map value must satisfy constraint: [{', '.join(value_violations)}]"
        problems.append(_problem(value, path, constraint))
    return dict(zip(value, cleaned_values, strict=True))


def _type_violation(shape: Shape) -> str:
    return f"Member must be of type {shape.type_name}"


def _is_scalar(shape: Shape) -> bool:
    return shape.type_name not in ("structure", "list", "map")


def _scalars(shape: Shape, values: list) -> tuple[list, list[str]]:
    """Check scalar items; return them converted and their distinct violations, in order."""
    cleaned, violations = [], []
    for item in values:
        converted, item_violations = _scalar(shape, item)
        cleaned.append(converted)
        violations.extend(v for v in item_violations if v not in violations)
    return cleaned, violations


def _scalar(shape: Shape, value: object) -> tuple[object, list[str]]:
    """Convert a scalar from its JSON form and list the constraints it violates."""
    converted = _convert(shape.type_name, value)
    if converted is None:
        return value, [_type_violation(shape)]
    if shape.type_name == "string":
        return converted, _string_violations(shape, converted)
    if shape.type_name in ("integer", "long", "float", "double"):
        return converted, _range_violations(shape, converted)
    return converted, []


def _convert(type_name: str, value: object) -> object | None:
    """The value as the handler receives it, or None when it has the wrong JSON type."""
    if isinstance(value, bool):
        return value if type_name == "boolean" else None
    if type_name in ("integer", "long"):
        return value if isinstance(value, int) and value in _INTEGER_RANGES[type_name] else None
    if type_name in ("float", "double"):
        if isinstance(value, str):
            return _NON_FINITE_FLOATS.get(value)
        return _to_float(value) if isinstance(value, int | float) else None
    if type_name == "timestamp":
        # JSON 1.1 timestamps are epoch seconds (an int, or a float with microseconds).
        return _epoch_to_datetime(value) if isinstance(value, int | float) else None
    if type_name in ("string", "blob"):
        return value if isinstance(value, str) else None
    return None


def _to_float(value: int | float) -> float | None:
    try:
        return float(value)
    except OverflowError:  # an int beyond the largest double
        return None


def _epoch_to_datetime(seconds: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):  # out of range, or NaN
        return None


def _string_violations(shape: Shape, value: str) -> list[str]:
    violations = _size_violations(shape, len(value))
    if shape.enum and value not in shape.enum:
        violations.append(f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
    pattern = shape.metadata.get("pattern")
    if pattern and not compile_pattern(pattern).fullmatch(value):
        violations.append(f"Member must satisfy regular expression pattern: {display_pattern(pattern)}")
    return violations


def _size_violations(shape: Shape, size: int) -> list[str]:
    """Length bounds of a string, list or map."""
    return _bound_violations(shape, size, "length")


def _range_violations(shape: Shape, value: float) -> list[str]:
    violations = _bound_violations(shape, value, "value")
    if violations or math.isfinite(value) or not {"min", "max"} & shape.metadata.keys():
        return violations
    # NaN compares false with every bound, and an infinity passes a bound on its other side alone
    # (VariantWeight has only a min): a member with a declared range holds finite numbers only.
    return ["Member must be a finite number"]


def _bound_violations(shape: Shape, amount: float, what: str) -> list[str]:
    violations = []
    if "min" in shape.metadata and amount < shape.metadata["min"]:
        violations.append(f"Member must have {what} greater than or equal to {shape.metadata['min']}")
    if "max" in shape.metadata and amount > shape.metadata["max"]:
        violations.append(f"Member must have {what} less than or equal to {shape.metadata['max']}")
    return violations
