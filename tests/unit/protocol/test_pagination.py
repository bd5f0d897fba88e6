"""NextToken pagination: tokens advance, the last page has none."""

import pytest

from accounts.accesskeys import create_access_key
from accounts.models import AccessKey
from protocol.errors import ValidationException
from protocol.pagination import paginate


def all_pages(items, page_size):
    pages, token, tokens = [], None, []
    while True:
        page, token = paginate(items, token, page_size)
        pages.append(page)
        if token is None:
            return pages, tokens
        tokens.append(token)


def test_pages_cover_every_item_once_with_advancing_tokens():
    pages, tokens = all_pages(list(range(7)), page_size=3)

    assert pages == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(set(tokens)) == len(tokens) == 2


def test_exactly_full_last_page_has_no_token():
    assert all_pages(list(range(6)), page_size=3)[0] == [[0, 1, 2], [3, 4, 5]]


def test_default_page_size_applies_without_max_results():
    page, token = paginate(list(range(150)), None, None, default_max=100)
    assert (len(page), token is not None) == (100, True)


def test_empty_collection_is_one_empty_page():
    assert paginate([], None, 10) == ([], None)


@pytest.mark.parametrize("token", ["garbage", "eyJvZmZzZXQiOiAtMX0=", "W10="])
def test_invalid_token_is_a_validation_exception(token):
    with pytest.raises(ValidationException, match="NextToken"):
        paginate(list(range(5)), token, 2)


def test_ordered_queryset_is_sliced_in_the_database(db, django_assert_num_queries):
    keys = [create_access_key("123456789012").access_key_id for _ in range(5)]
    queryset = AccessKey.objects.order_by("id").values_list("access_key_id", flat=True)

    with django_assert_num_queries(1) as captured:
        page, token = paginate(queryset, None, 2)
    assert page == keys[:2]
    assert "LIMIT 3" in captured.captured_queries[0]["sql"]
    assert paginate(queryset, token, 2)[0] == keys[2:4]
