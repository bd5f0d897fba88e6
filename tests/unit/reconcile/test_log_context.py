"""Log lines are one JSON object each and name the resource being reconciled."""
import io
import json
import logging

import pytest

from reconcile import log_context
from reconcile.loop import reconcile_once
from tests.unit.training.test_scheduler import make_job
from training.models import TrainingJob


@pytest.fixture
def lines():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(log_context.ResourceFilter())
    handler.setFormatter(log_context.JsonFormatter())
    logger = logging.getLogger("sageport.test")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


@pytest.mark.django_db(transaction=True)
def test_a_line_written_during_a_reconcile_step_names_the_job_and_account(lines):
    job = make_job("ml.m5.large")

    def step(row, token):
        logging.getLogger("sageport.test").warning("pulling %s", "algo:latest")
        return None

    reconcile_once(TrainingJob, job.pk, step, give_up=lambda row, reason: None)
    logging.getLogger("sageport.test").warning("between steps")

    first, second = lines()
    assert first["message"] == "pulling algo:latest"
    assert first["level"] == "WARNING"
    assert first["resource"] == {
        "kind": "TrainingJob", "name": job.training_job_name, "account": "123456789012"
    }
    assert "resource" not in second


def test_a_traceback_stays_inside_its_one_json_line(lines):
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        logging.getLogger("sageport.test").exception("failed")

    (line,) = lines()
    assert line["message"] == "failed"
    assert "ValueError: bad" in line["traceback"]
