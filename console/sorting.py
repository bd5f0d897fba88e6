"""A list's order chosen from its column headings (`?sort=<SortBy>&order=Ascending|Descending`, the
list's own List operation's SortBy values): what the API would sort by, newest first otherwise;
and the days its rows were created between (`?after=` / `?before=`, UTC dates, both included)."""

from datetime import UTC, date, datetime, time, timedelta

from django.http import HttpRequest

from protocol.listing import NEWEST_FIRST

ORDERS = ("Ascending", "Descending")


def chosen(request: HttpRequest, sort_fields: dict[str, str]) -> dict:
    """The List operation's SortBy, SortOrder and creation-time bounds the request asks for."""
    return {**requested(request, sort_fields), **created_between(request)}


def requested(request: HttpRequest, sort_fields: dict[str, str]) -> dict:
    """SortBy and SortOrder for `filtered_and_sorted`: the request's when the list sorts by it."""
    sort_by, order = request.GET.get("sort", ""), request.GET.get("order", "")
    if sort_by in sort_fields and order in ORDERS:
        return {"SortBy": sort_by, "SortOrder": order}
    return NEWEST_FIRST


def created_between(request: HttpRequest) -> dict:
    """CreationTimeAfter / CreationTimeBefore (the List operations' own, both exclusive) for the
    UTC days the request names; a date that is not YYYY-MM-DD is no bound."""
    bounds = {}
    after, before = _day(request.GET.get("after", "")), _day(request.GET.get("before", ""))
    if after:
        bounds["CreationTimeAfter"] = datetime.combine(after, time.min, UTC) - timedelta(microseconds=1)
    if before:
        bounds["CreationTimeBefore"] = datetime.combine(before + timedelta(days=1), time.min, UTC)
    return bounds


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        return None
