"""The lists: newest first, filtered by name and status as the List operations filter."""

from tests.unit.console.conftest import ACCOUNT_A, make_job
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
