"""Filtering and ordering shared by the List* operations, with SageMaker's semantics: time
bounds are strict, NameContains is a case-insensitive substring, the default order is newest
first, and the primary key breaks ties so pages never overlap."""
from django.db.models import QuerySet

TIME_BOUNDS = {
    "CreationTimeAfter": "creation_time__gt",
    "CreationTimeBefore": "creation_time__lt",
    "LastModifiedTimeAfter": "last_modified_time__gt",
    "LastModifiedTimeBefore": "last_modified_time__lt",
}


def filtered_and_sorted(
    rows: QuerySet, params: dict, *, name_field: str, sort_fields: dict[str, str], status_field: str = ""
) -> QuerySet:
    """`rows` narrowed by the request's filters and ordered by its SortBy/SortOrder. A member the
    operation's shape does not have never reaches here (validation refuses it)."""
    for member, lookup in TIME_BOUNDS.items():
        if member in params:
            rows = rows.filter(**{lookup: params[member]})
    if "NameContains" in params:
        rows = rows.filter(**{f"{name_field}__icontains": params["NameContains"]})
    if "StatusEquals" in params:
        rows = rows.filter(**{status_field: params["StatusEquals"]})
    field = sort_fields[params.get("SortBy", "CreationTime")]
    prefix = "" if params.get("SortOrder", "Descending") == "Ascending" else "-"
    return rows.order_by(f"{prefix}{field}", f"{prefix}pk")
