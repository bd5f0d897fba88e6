"""Bounds on what a request may make the server do or say."""

from django.http import HttpRequest

# Characters of a client-supplied value quoted back in an error message: enough to recognise
# it, never enough to turn a large request into a larger reply.
ECHO_LIMIT = 200


def echo(value: str, limit: int = ECHO_LIMIT) -> str:
    """`value` as an error message may quote it: cut to `limit` characters, marked by `...`."""
    return value if len(value) <= limit else value[:limit] + "..."


def declared_length(request: HttpRequest) -> int:
    """The body length the client declared (WSGI servers read no more than it; none: no body)."""
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0
