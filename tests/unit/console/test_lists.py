"""The lists: newest first, filtered by name and status as the List operations filter."""

import re
from datetime import UTC, datetime

from hosting.models import Endpoint
from tests.unit.console.conftest import ACCOUNT_A, in_service_endpoint, make_job
from training.models import TrainingJob


def _names(client, query: str = "") -> list[str]:
    html = client.get(f"/console/training-jobs/rows{query}").json()["html"]
    return [name for name in ("alpha-one", "beta-two", "alpha-three") if f'data-job="{name}"' in html]


def _order(client) -> list[str]:
    html = client.get("/console/training-jobs/").content.decode()
    return sorted(["alpha-one", "beta-two", "alpha-three"], key=lambda name: html.index(f'data-job="{name}"'))


def test_jobs_are_listed_newest_first_and_filtered_by_name_and_status(account_a):
    for name in ("alpha-one", "beta-two", "alpha-three"):
        make_job(ACCOUNT_A, name)
    TrainingJob.objects.filter(training_job_name="alpha-one").update(training_job_status="Failed")

    assert _order(account_a) == ["alpha-three", "beta-two", "alpha-one"]
    assert _names(account_a, "?name=ALPHA") == ["alpha-one", "alpha-three"]  # case-insensitive
    assert _names(account_a, "?status=Failed") == ["alpha-one"]
    assert _names(account_a, "?status=NoSuchStatus") == ["alpha-one", "beta-two", "alpha-three"]


def test_the_endpoints_list_refreshes_its_rows_and_counts_those_still_changing(account_a):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    page = account_a.get("/console/endpoints/").content.decode()
    assert 'data-live-rows="/console/endpoints/rows?' in page

    rows = account_a.get("/console/endpoints/rows").json()
    assert endpoint.endpoint_name in rows["html"] and "InService" in rows["html"] and rows["running"] == 0
    Endpoint.objects.filter(pk=endpoint.pk).update(endpoint_status="Deleting")
    assert account_a.get("/console/endpoints/rows").json()["running"] == 1
    Endpoint.objects.filter(pk=endpoint.pk).delete()
    rows = account_a.get("/console/endpoints/rows").json()
    assert endpoint.endpoint_name not in rows["html"] and "No endpoints." in rows["html"]


def test_a_column_heading_sorts_the_list_and_says_how_it_is_sorted(account_a):
    for name in ("bravo", "alpha", "charlie"):
        make_job(ACCOUNT_A, name)

    def names(query: str) -> list[str]:
        html = account_a.get(f"/console/training-jobs/{query}").content.decode()
        return [name for name in re.findall(r'data-job="([a-z]+)"', html)]

    assert names("") == ["charlie", "alpha", "bravo"]  # newest first
    assert names("?sort=Name&order=Ascending") == ["alpha", "bravo", "charlie"]
    assert names("?sort=Name&order=Descending") == ["charlie", "bravo", "alpha"]
    assert names("?sort=Bogus&order=Ascending") == ["charlie", "alpha", "bravo"]  # not a SortBy: the default
    query = "?sort=Name&order=Ascending&status=InProgress"
    page = account_a.get(f"/console/training-jobs/{query}").content.decode()
    next_order = '<a href="?sort=Name&amp;order=Descending&amp;status=InProgress">Name</a>'
    assert f'aria-sort="ascending">{next_order}' in page
    rows = account_a.get("/console/training-jobs/rows?sort=Name&order=Ascending").json()["html"]
    assert re.findall(r'data-job="([a-z]+)"', rows) == ["alpha", "bravo", "charlie"]  # the live refresh too


def test_the_list_keeps_the_jobs_created_between_two_utc_days(account_a):
    for name, day in (("early", 1), ("middle", 2), ("late", 3)):
        job = make_job(ACCOUNT_A, name)
        created = datetime(2026, 11, day, 23, 59, 59, tzinfo=UTC)
        TrainingJob.objects.filter(pk=job.pk).update(creation_time=created)

    def names(query: str) -> list[str]:
        html = account_a.get(f"/console/training-jobs/{query}").content.decode()
        return re.findall(r'data-job="([a-z]+)"', html)

    assert names("?after=2026-11-02&before=2026-11-02") == ["middle"]  # both days included
    assert names("?after=2026-11-02") == ["late", "middle"]
    assert names("?before=2026-11-01") == ["early"]
    assert names("?after=not-a-day") == ["late", "middle", "early"]
    assert 'value="2026-11-02"' in account_a.get("/console/training-jobs/?after=2026-11-02").content.decode()
