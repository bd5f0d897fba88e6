"""Opaque NextToken pagination: tokens advance, the last page has none."""

import base64
import binascii
import json
from collections.abc import Sequence

from django.db.models import QuerySet

from protocol.errors import ValidationException

# Far beyond any real listing, and small enough that offset + page size stays a 64-bit integer
# for the database (a forged token past 2**63 would otherwise overflow it: a 500).
MAX_OFFSET = 2**53


def paginate(
    items: Sequence | QuerySet, next_token: str | None, max_results: int | None, default_max: int = 100
) -> tuple[list, str | None]:
    """One page of `items` (an ordered QuerySet is sliced in the database) and the token of
    the next page, or None on the last one."""
    offset, limit = page_bounds(next_token, max_results, default_max)
    # One extra row says whether another page exists without counting the whole set.
    return page_of(list(items[offset : offset + limit + 1]), offset, limit)


def page_bounds(next_token: str | None, max_results: int | None, default_max: int = 100) -> tuple[int, int]:
    """(offset, page size) a request asks for; read `limit + 1` items from the offset."""
    limit = default_max if max_results is None else max_results
    if limit < 1:
        raise ValidationException(f"MaxResults must be at least 1, got {limit}.")
    return (_decode(next_token) if next_token else 0), limit


def page_of(window: list, offset: int, limit: int) -> tuple[list, str | None]:
    """The page and the next page's token from the `limit + 1` items read at `offset`."""
    has_more = len(window) > limit
    return window[:limit], _encode(offset + limit) if has_more else None


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _decode(token: str) -> int:
    try:
        offset = json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]
    except (binascii.Error, UnicodeError, ValueError, TypeError, KeyError):
        offset = None
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise ValidationException("The provided NextToken is not valid.")
    return offset
