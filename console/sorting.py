"""A list's order chosen from its column headings (`?sort=<SortBy>&order=Ascending|Descending`, the
list's own List operation's SortBy values): what the API would sort by, newest first otherwise."""

from django.http import HttpRequest

from protocol.listing import NEWEST_FIRST

ORDERS = ("Ascending", "Descending")


def requested(request: HttpRequest, sort_fields: dict[str, str]) -> dict:
    """SortBy and SortOrder for `filtered_and_sorted`: the request's when the list sorts by it."""
    sort_by, order = request.GET.get("sort", ""), request.GET.get("order", "")
    if sort_by in sort_fields and order in ORDERS:
        return {"SortBy": sort_by, "SortOrder": order}
    return NEWEST_FIRST
