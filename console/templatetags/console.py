"""Filters of the console's templates: times, durations, status colours, pretty JSON."""

import json
from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

from console import addresses, s3_links

register = template.Library()

# A status's colour family (the CSS classes badge-<family>).
_FAMILIES = {
    "Completed": "ok",
    "Succeeded": "ok",
    "InService": "ok",
    "Active": "ok",
    "Failed": "bad",
    "MaxRuntimeExceeded": "bad",
    "Stopped": "idle",
    "Stopping": "warn",
    "Deleting": "warn",
    "Draining": "warn",
    "Retiring": "idle",
    "Pending": "warn",
    "Restarting": "warn",
    "Waiting": "idle",  # a pipeline step that has not started (console/views_pipelines.py)
    "Will not run": "idle",
}


@register.filter
def utc(moment: datetime | None) -> str:
    """Every time on the console one way, its zone shown: `2026-11-28 18:45:07 UTC`, in a <time>
    element a script or a reader's tools can read (nothing for no time)."""
    if moment is None or moment == "":
        return ""
    moment = moment.astimezone(UTC)
    return format_html(
        '<time datetime="{}">{} UTC</time>', moment.isoformat(), moment.strftime("%Y-%m-%d %H:%M:%S")
    )


@register.filter
def family(status: str) -> str:
    return _FAMILIES.get(status, "run")


@register.filter
def s3_folder(uri: str) -> str:
    """The console's listing of an S3 prefix (console/views_s3.py)."""
    return s3_links.folder_href(uri)


@register.filter
def seconds(value: float | None) -> str:
    """1h 02m, 3m 04s, 5s."""
    if value is None:
        return "—"
    total = max(0, int(value))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@register.simple_tag
def span(start: datetime | None, end: datetime | None = None) -> str:
    """How long from `start` to `end` (still running: to now)."""
    if start is None:
        return "—"
    return seconds(((end or timezone.now()) - start).total_seconds())


@register.simple_tag
def job_duration(job) -> str:
    end = job.training_end_time or (job.last_modified_time if job.is_terminal else None)
    return span(job.creation_time, end)


@register.filter
def pretty(value) -> str:
    return json.dumps(value, indent=2, default=str)


@register.filter
def gib(value: float) -> str:
    return f"{value:.1f} GiB"


@register.simple_tag(takes_context=True)
def sortable(context, title: str, sort_by: str) -> str:
    """A list's column heading that sorts the list by `sort_by` (console/sorting.py): ascending
    first, descending when it already is; `aria-sort` says which way it is sorted now."""
    query = context["request"].GET.copy()
    current = query.get("sort") == sort_by and query.get("order") in ("Ascending", "Descending")
    by_default = not query.get("sort") and sort_by == "CreationTime"  # newest first
    order = query.get("order") if current else ("Descending" if by_default else None)
    query["sort"], query["order"] = sort_by, "Descending" if order == "Ascending" else "Ascending"
    query.pop("page", None)
    aria = {"Ascending": "ascending", "Descending": "descending"}.get(order, "none")
    arrow = {"Ascending": " ▲", "Descending": " ▼"}.get(order, "")
    return format_html(
        '<th scope="col" aria-sort="{}"><a href="?{}">{}</a>{}</th>', aria, query.urlencode(), title, arrow
    )


@register.simple_tag(takes_context=True)
def address(context, page: str, row) -> str:
    """`{% address 'console:training-job' job %}`: the page (or sub-route) of a resource by its
    name, scoped to its account and region where the viewer needs it (console/addresses.py)."""
    return addresses.address(context["request"].viewer, row, page)
