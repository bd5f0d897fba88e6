"""SageMaker's `Search`: a SearchExpression evaluated over the documents of one resource type.

Features register what can be searched with `register_searchable("ModelPackage", documents)`,
where `documents(ctx)` answers the caller's resources as their SearchRecord member (the response
shape, datetimes as datetimes). The rules are the botocore documentation of `Filter`,
`SearchExpression` and `SearchRequest`: a property is a dotted path (`Tags.<key>` a tag's value; a
list matches when one of its elements does), Operator defaults to Equals, GreaterThan and its
kind are not for text, In and Contains only for text, one Contains per request, an expression
combines its filters, nested filters and sub-expressions with And (default) or Or; results sorted
by SortBy (default LastModifiedTime) in SortOrder (default Descending), paged."""

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from protocol.context import RequestContext
from protocol.errors import NotImplementedOperation, ValidationException
from protocol.pagination import paginate
from protocol.registry import operation
from protocol.shapes import service_model

Documents = Callable[[RequestContext], list[dict]]
_searchable: dict[str, Documents] = {}
_MISSING = object()
DEFAULT_SORT_BY = "LastModifiedTime"
# Where a document has no LastModifiedTime (a package never updated), it sorts by its creation.
SORT_FALLBACK = "CreationTime"
_ORDERED = {"GreaterThan", "GreaterThanOrEqualTo", "LessThan", "LessThanOrEqualTo"}
_TEXT_ONLY = {"In", "Contains"}


def register_searchable(resource: str, documents: Documents) -> None:
    _searchable[resource] = documents


def in_shape(shape: str, body: dict) -> dict:
    """A record of `body`'s members that the SearchRecord member `shape` has (what Describe answers
    holds more: its own response's members)."""
    members = service_model("sagemaker").shape_for(shape).members
    return {member: value for member, value in body.items() if member in members}


@operation("Search")
def search(ctx: RequestContext, params: dict) -> dict:
    resource = params["Resource"]
    documents = _searchable.get(resource)
    if documents is None:
        raise NotImplementedOperation(f"Sageport does not implement SageMaker.Search for Resource {resource}")
    expression = params.get("SearchExpression")
    if expression is not None:
        _check_contains_limit(expression)
    found = [doc for doc in documents(ctx) if expression is None or matches(expression, doc)]
    found = sort(found, params.get("SortBy", DEFAULT_SORT_BY), params.get("SortOrder", "Descending"))
    page, next_token = paginate(found, params.get("NextToken"), params.get("MaxResults"), default_max=10)
    return {
        "Results": [{resource: doc} for doc in page],
        "NextToken": next_token,
        "TotalHits": {"Value": len(found), "Relation": "EqualTo"},
    }


def sort(documents: list[dict], sort_by: str, sort_order: str) -> list[dict]:
    """Documents without the property go last in either order."""

    def key(doc: dict):
        value = _first(values_at(doc, sort_by))
        if value is _MISSING and sort_by == DEFAULT_SORT_BY:
            value = _first(values_at(doc, SORT_FALLBACK))
        if value is not _MISSING:
            _check_scalar(value, sort_by)
        return value

    present = [doc for doc in documents if key(doc) is not _MISSING]
    absent = [doc for doc in documents if key(doc) is _MISSING]
    try:
        ordered = sorted(present, key=key, reverse=sort_order == "Descending")
    except TypeError:  # values of different kinds under one property name
        message = f"Results cannot be sorted by {sort_by}: its values differ in kind."
        raise ValidationException(message) from None
    return ordered + absent


def _first(values: list):
    return values[0] if values else _MISSING


def matches(expression: dict, doc: dict) -> bool:
    outcomes = [filter_matches(item, doc) for item in expression.get("Filters", [])]
    outcomes += [_nested_matches(nested, doc) for nested in expression.get("NestedFilters", [])]
    outcomes += [matches(sub, doc) for sub in expression.get("SubExpressions", [])]
    if not outcomes:
        raise ValidationException(
            "A SearchExpression must specify at least one subexpression, filter, or nested filter."
        )
    return any(outcomes) if expression.get("Operator") == "Or" else all(outcomes)


def _nested_matches(nested: dict, doc: dict) -> bool:
    """Satisfied when one object of the list satisfies every filter (names are given in full,
    `<NestedPropertyName>.<member>`, as SageMaker's examples write them)."""
    prefix = nested["NestedPropertyName"] + "."
    elements = values_at(doc, nested["NestedPropertyName"])
    filters = [{**item, "Name": item["Name"].removeprefix(prefix)} for item in nested["Filters"]]
    objects = [element for element in elements if isinstance(element, dict)]
    return any(all(filter_matches(item, element) for item in filters) for element in objects)


def filter_matches(item: dict, doc: dict) -> bool:
    name, operator, value = item["Name"], item.get("Operator", "Equals"), item.get("Value")
    found = values_at(doc, name)
    if operator in ("Exists", "NotExists"):
        return bool(found) == (operator == "Exists")
    if value is None:
        raise ValidationException(f"Filter on {name} with Operator {operator} needs a Value.")
    return any(_compare(operator, actual, value, name) for actual in found)


def _compare(operator: str, actual, value: str, name: str) -> bool:
    _check_scalar(actual, name)
    if isinstance(actual, str):
        if operator in _ORDERED:
            raise ValidationException(f"Operator {operator} is not supported for text property {name}.")
        if operator == "In":
            return actual in [part.strip() for part in value.split(",")]
        if operator == "Contains":
            return value in actual
        return (actual == value) == (operator == "Equals")
    if operator in _TEXT_ONLY:
        raise ValidationException(f"Operator {operator} is only supported for text properties, not {name}.")
    given = _typed_like(actual, value, name)
    return {
        "Equals": actual == given,
        "NotEquals": actual != given,
        "GreaterThan": actual > given,
        "GreaterThanOrEqualTo": actual >= given,
        "LessThan": actual < given,
        "LessThanOrEqualTo": actual <= given,
    }[operator]


def _typed_like(actual, value: str, name: str):
    """The filter's Value read as the property's type: Boolean, timestamp (ISO 8601 or epoch
    seconds), or number."""
    try:
        if isinstance(actual, bool):
            if value.lower() not in ("true", "false"):
                raise ValueError(value)
            return value.lower() == "true"
        if isinstance(actual, datetime):
            return _timestamp(value)
        return float(value)
    except ValueError:
        raise ValidationException(f"Value '{value[:200]}' cannot be compared with property {name}.") from None


def _timestamp(value: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except ValueError:
        parsed = datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _check_scalar(value, name: str) -> None:
    """Only text, numbers, Booleans and timestamps are compared or sorted on (Search's value
    types); a structure is not."""
    if isinstance(value, dict):
        raise ValidationException(f"Property {name} is a structure: name one of its members.")


def values_at(doc, path: str) -> list:
    """Every value at the dotted `path`, through lists; `Tags.<key>` reads the tag list as a map."""
    return list(_walk(doc, path.split(".")))


def _walk(node, parts: list[str]) -> Iterator:
    if isinstance(node, list):
        for element in node:
            yield from _walk(element, parts)
        return
    if not parts:
        yield node
        return
    if not isinstance(node, dict):
        return
    head, rest = parts[0], parts[1:]
    child = node.get(head, _MISSING)
    if head == "Tags" and isinstance(child, list) and rest:
        child = {tag.get("Key"): tag.get("Value") for tag in child if isinstance(tag, dict)}
    if child is not _MISSING and child is not None:
        yield from _walk(child, rest)


def _check_contains_limit(expression: dict) -> None:
    if _count_contains(expression) > 1:
        # The documented answer (Filter's Operator: "'CONTAINS' operator usage limit of 1 exceeded.").
        raise ValidationException("'CONTAINS' operator usage limit of 1 exceeded.")


def _count_contains(expression: dict) -> int:
    filters = list(expression.get("Filters", []))
    for nested in expression.get("NestedFilters", []):
        filters += nested["Filters"]
    own = sum(1 for item in filters if item.get("Operator") == "Contains")
    return own + sum(_count_contains(sub) for sub in expression.get("SubExpressions", []))
