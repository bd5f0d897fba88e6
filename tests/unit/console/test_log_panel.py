"""A job page's log panel on a long stream: the last lines first, earlier pages back to the first
line, a search over the whole stream, and the whole stream as a download."""

import pytest

from console import live
from logs import store
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, make_job, signed_in
from training.kind import TRAINING_LOG_GROUP

LINES = 1234  # more than two pages of live.MAX_LINES


@pytest.fixture
def job_logs(db):
    job = make_job(ACCOUNT_A, "long")
    stream = store.get_stream(ACCOUNT_A, "us-east-1", TRAINING_LOG_GROUP, "long/algo-1-1")
    lines = [(1_700_000_000_000 + index, f"line {index}" + (" Error: boom" if index == 7 else ""))
             for index in range(LINES)]
    store.append(stream, lines, cursor="end")
    return f"/console/training-jobs/{job.training_job_name}/logs?stream=long/algo-1-1"


def _messages(answer) -> list[str]:
    return [event["m"] for event in answer["events"]]


def test_the_panel_pages_back_from_the_last_lines_to_the_first(job_logs):
    client = signed_in(ACCOUNT_A)
    answer = client.get(job_logs).json()
    seen = _messages(answer)
    assert seen[-1] == f"line {LINES - 1}" and len(seen) == live.MAX_LINES
    for _ in range(5):  # bounded: three pages hold the stream
        answer = client.get(f"{job_logs}&before={answer['back']}").json()
        if not answer["events"]:
            break
        seen = _messages(answer) + seen
    assert seen == [f"line {index}" + (" Error: boom" if index == 7 else "") for index in range(LINES)]


def test_a_search_finds_a_line_before_the_last_pages_any_case(job_logs):
    client = signed_in(ACCOUNT_A)
    assert _messages(client.get(f"{job_logs}&q=error:").json()) == ["line 7 Error: boom"]
    answer = client.get(f"{job_logs}&q=line 12").json()
    assert _messages(answer)[:2] == ["line 12", "line 120"] and not answer["more"]
    assert client.get(f"{job_logs}&q=nowhere").json() == {"events": [], "more": False}


def test_the_download_is_the_whole_stream_with_utc_times(job_logs):
    response = signed_in(ACCOUNT_A).get(f"{job_logs}&download=1")
    assert response["Content-Disposition"] == 'attachment; filename="long_algo-1-1.log"'
    text = b"".join(response.streaming_content).decode().splitlines()
    assert len(text) == LINES
    assert text[0] == "2023-11-14T22:13:20.000Z line 0" and text[-1].endswith(f" line {LINES - 1}")


def test_another_account_reads_none_of_it(job_logs):
    other = signed_in(ACCOUNT_B)
    for suffix in ("", "&q=line", "&download=1"):
        assert other.get(job_logs + suffix).status_code == 404
