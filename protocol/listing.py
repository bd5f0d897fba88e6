"""Filtering and ordering shared by the List* operations, with SageMaker's semantics: time
bounds are strict, NameContains is a case-insensitive substring, the order a request leaves out
is the one the operation's botocore documentation names (ListClusters: oldest first, ListModels:
newest first), and the primary key breaks ties so pages never overlap."""
import re
from collections.abc import Callable
from datetime import datetime
from functools import cache, lru_cache

from django.db.models import Model, QuerySet, Value
from django.db.models.functions import Lower, StrIndex

from protocol import pagination, shapes
from protocol.prepared import PreparedQuery

TIME_BOUNDS = {
    "CreationTimeAfter": "creation_time__gt",
    "CreationTimeBefore": "creation_time__lt",
    "LastModifiedTimeAfter": "last_modified_time__gt",
    "LastModifiedTimeBefore": "last_modified_time__lt",
}
# The filters a prepared listing takes as parameters, with their types.
_FILTERS = {**dict.fromkeys(TIME_BOUNDS, datetime), "NameContains": str, "StatusEquals": str}
# Query shapes (filters present, order, page) a PreparedListing keeps compiled.
PREPARED_SHAPES = 256
# What a listing sorts by where its documentation names no default (the task governance lists).
UNDOCUMENTED_SORT_BY = "CreationTime"
# The console's order, whatever the API's default.
NEWEST_FIRST = {"SortBy": "CreationTime", "SortOrder": "Descending"}
# Where the real service is observed to differ from its documentation: ListTrainingJobs' doc says
# Ascending, SageMaker answers newest first (shared/protocol.md, "List*", real-service, observed).
OBSERVED_ORDER = {"ListTrainingJobs": ("CreationTime", "Descending")}
# Where the documentation names no default SortOrder (ListPipelines, ListPipelineExecutions: "The
# sort order for results.") or has no SortBy (ListPipelineExecutionSteps): newest first, as the
# SageMaker console shows them (an assumption: not observed on the real service).
UNDOCUMENTED_ORDER = {
    "ListPipelines": ("CreationTime", "Descending"),
    "ListPipelineExecutions": ("CreationTime", "Descending"),
    "ListPipelineExecutionSteps": ("CreationTime", "Descending"),
}


@cache
def documented_order(operation: str, service: str = "sagemaker") -> tuple[str, str]:
    """The SortBy and SortOrder that `operation`'s input documentation names as its defaults
    ("The default is Ascending.", "The default value is CREATION_TIME.", "By default, listed in
    Descending order"): the enum value named first after the word "default"."""
    members = shapes.operation_model(service, operation).input_shape.members
    sort_by = _documented_default(members["SortBy"]) or UNDOCUMENTED_SORT_BY
    sort_order = _documented_default(members["SortOrder"])
    if sort_order is None:
        raise LookupError(f"{operation}'s documentation names no default SortOrder")
    return sort_by, sort_order


def _documented_default(shape) -> str | None:
    said = re.search(r"\bdefault\b(.*)", shape.documentation, re.IGNORECASE | re.DOTALL)
    if said is None:
        return None
    named = [(found.start(), value) for value in shape.enum if (found := re.search(rf"\b{value}\b", said[1]))]
    return min(named)[1] if named else None


def default_order(operation: str) -> tuple[str, str]:
    """The order `operation` answers in when the request names none: the documented one, unless
    the real service is observed to answer otherwise."""
    return OBSERVED_ORDER.get(operation) or UNDOCUMENTED_ORDER.get(operation) or documented_order(operation)


def ordering(operation: str, params: dict) -> tuple[str, str]:
    """The request's SortBy and SortOrder, each the default where it names none."""
    sort_by, sort_order = default_order(operation)
    return params.get("SortBy", sort_by), params.get("SortOrder", sort_order)


def filtered_and_sorted(
    rows: QuerySet,
    params: dict,
    *,
    operation: str,
    name_field: str,
    sort_fields: dict[str, str],
    status_field: str = "",
) -> QuerySet:
    """`rows` narrowed by the request's filters and ordered as `operation` orders them (its
    SortBy/SortOrder or their documented defaults). A member the operation's shape does not have
    never reaches here (validation refuses it)."""
    for member, lookup in TIME_BOUNDS.items():
        if member in params:
            rows = rows.filter(**{lookup: params[member]})
    if "NameContains" in params:
        # The text goes to the database as it is (not made into a LIKE pattern), so that a
        # PreparedListing can compile the query once; names are ASCII, which both fold alike.
        position = StrIndex(Lower(name_field), Lower(Value(params["NameContains"])))
        rows = rows.alias(name_contains_at=position).filter(name_contains_at__gt=0)
    if "StatusEquals" in params:
        rows = rows.filter(**{status_field: params["StatusEquals"]})
    sort_by, sort_order = ordering(operation, params)
    prefix = "" if sort_order == "Ascending" else "-"
    return rows.order_by(f"{prefix}{sort_fields[sort_by]}", f"{prefix}pk")


class PreparedListing:
    """`filtered_and_sorted` + `pagination.paginate` of one operation, with the page's query
    compiled once per shape (which filters are present, the order, the page's offset and size;
    protocol/prepared.py): building and compiling it was ~40% of a ListTrainingJobs' CPU.
    `rows(account_id, region)` is the QuerySet of the caller's resources."""

    def __init__(self, rows: Callable[[str, str], QuerySet], *, operation: str, name_field: str,
                 sort_fields: dict[str, str], status_field: str = ""):
        self._rows = rows
        self._operation = operation
        self._arguments = {
            "operation": operation,
            "name_field": name_field,
            "sort_fields": sort_fields,
            "status_field": status_field,
        }
        self._query = lru_cache(maxsize=PREPARED_SHAPES)(self._prepare)

    def page(self, account_id: str, region: str, params: dict) -> tuple[list[Model], str | None]:
        offset, limit = pagination.page_bounds(params.get("NextToken"), params.get("MaxResults"))
        filters = tuple(name for name in _FILTERS if name in params)
        order = ordering(self._operation, params)
        query = self._query(filters, order, offset, limit)
        window = query(account_id, region, *(params[name] for name in filters))
        return pagination.page_of(window, offset, limit)

    def _prepare(
        self, filters: tuple[str, ...], order: tuple[str, str], offset: int, limit: int
    ) -> PreparedQuery:
        def build(account_id: str, region: str, *values) -> QuerySet:
            params = dict(zip(filters, values, strict=True), SortBy=order[0], SortOrder=order[1])
            rows = filtered_and_sorted(self._rows(account_id, region), params, **self._arguments)
            return rows[offset : offset + limit + 1]

        return PreparedQuery(build, str, str, *(_FILTERS[name] for name in filters))
