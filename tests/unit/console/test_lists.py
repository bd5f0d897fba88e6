"""The lists: newest first, filtered by name and status as the List operations filter."""

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
