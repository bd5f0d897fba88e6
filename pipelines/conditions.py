"""A Condition step's conditions, as the SDK writes them (sagemaker.workflow.conditions), checked
at create and evaluated at run time. All of a step's conditions must hold for its outcome to be
True (the SDK: "the conditions are ANDed")."""

from collections.abc import Callable

from pipelines.expressions import ExpressionError

COMPARISONS = {
    "Equals": lambda left, right: left == right,
    "GreaterThan": lambda left, right: left > right,
    "GreaterThanOrEqualTo": lambda left, right: left >= right,
    "LessThan": lambda left, right: left < right,
    "LessThanOrEqualTo": lambda left, right: left <= right,
}
TYPES = (*COMPARISONS, "In", "Not", "Or")

Evaluate = Callable[[object], object]


def problems(conditions: object) -> list[str]:
    if not isinstance(conditions, list) or not conditions:
        return ["Conditions must be a non-empty list of conditions."]
    return [problem for condition in conditions for problem in _problems(condition)]


def _problems(condition: object) -> list[str]:
    kind = condition.get("Type") if isinstance(condition, dict) else None
    if kind not in TYPES:
        return [f"condition type {kind!r} is not one of {', '.join(TYPES)}."]
    needed = {"In": ("QueryValue", "Values"), "Not": ("Expression",), "Or": ("Conditions",)}.get(
        kind, ("LeftValue", "RightValue")
    )
    missing = [member for member in needed if member not in condition]
    if missing:
        return [f"a condition of type {kind} needs {', '.join(missing)}."]
    if kind == "Not":
        return _problems(condition["Expression"])
    if kind == "Or":
        return problems(condition["Conditions"])
    return []


def holds(conditions: list[dict], evaluate: Evaluate) -> bool:
    return all(_holds(condition, evaluate) for condition in conditions)


def _holds(condition: dict, evaluate: Evaluate) -> bool:
    kind = condition["Type"]
    if kind == "Not":
        return not _holds(condition["Expression"], evaluate)
    if kind == "Or":
        return any(_holds(inner, evaluate) for inner in condition["Conditions"])
    if kind == "In":
        query = evaluate(condition["QueryValue"])
        return any(_equal(query, evaluate(value)) for value in condition["Values"])
    left, right = _comparable(evaluate(condition["LeftValue"]), evaluate(condition["RightValue"]))
    try:
        return COMPARISONS[kind](left, right)
    except TypeError:
        raise ExpressionError(f"{kind} cannot compare {left!r} with {right!r}") from None


def _equal(left: object, right: object) -> bool:
    left, right = _comparable(left, right)
    return left == right


def _comparable(left: object, right: object) -> tuple[object, object]:
    """A number compared with a number-like string (a JSON value, a parameter) compares as numbers."""
    numbers = (int, float)
    if isinstance(left, numbers) and isinstance(right, str):
        return left, _number(right, right)
    if isinstance(right, numbers) and isinstance(left, str):
        return _number(left, left), right
    return left, right


def _number(text: str, fallback: object) -> object:
    try:
        return float(text)
    except ValueError:
        return fallback
