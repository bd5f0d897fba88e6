"""The pipeline pages: the list, a pipeline's steps and executions, an execution's steps with
their state (started ones with their job, the others waiting) for the owner only, and Stop
through StopPipelineExecution."""

import json

from pipelines import services
from pipelines.models import PipelineExecutionStep
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, ctx, job_request, signed_in
from training import services as training_services

STEPS = [
    {"Name": "First", "Type": "Fail", "Arguments": {"ErrorMessage": "stop here"}},
    {"Name": "Second", "Type": "Fail", "Arguments": {}, "DependsOn": ["First"]},
]

EARLIER = f"arn:aws:sagemaker:us-east-1:{ACCOUNT_A}:pipeline/flow/execution/earlier1234"


def test_pipeline_pages_render_for_their_account_only(account_a, monkeypatch):
    monkeypatch.setattr("pipelines.services.nudge", lambda execution_id: None)
    definition = json.dumps({"Version": "2020-12-01", "Parameters": [], "Steps": STEPS})
    pipeline = services.create_pipeline(
        ctx(ACCOUNT_A),
        {
            "PipelineName": "flow",
            "PipelineDefinition": definition,
            "RoleArn": f"arn:aws:iam::{ACCOUNT_A}:role/r",
        },
    )
    execution = services.start_execution(
        ctx(ACCOUNT_A), {"PipelineName": "flow", "ClientRequestToken": "t" * 32}
    )
    PipelineExecutionStep.objects.create(
        execution=execution,
        step_name="First",
        step_type="Fail",
        status="Executing",
        start_time=execution.creation_time,
        attempt_count=2,
        cache_source_execution_arn=EARLIER,
    )

    assert "flow" in account_a.get("/console/pipelines/").content.decode()
    page = account_a.get(f"/console/pipelines/{pipeline.name}/").content.decode()
    execution_page = f"/console/pipelines/{pipeline.name}/executions/{execution.execution_id}/"
    assert f'href="{execution_page}"' in page and "Second" in page
    page = account_a.get(execution_page).content.decode()
    assert "Executing" in page and "Waiting" in page
    assert 'class="dag-node dag-run"' in page and 'class="dag-node dag-idle"' in page  # the graph
    assert 'href="#step-Second"' in page and 'id="step-Second"' in page
    assert "<td>2</td>" in page and f"Cache hit: the job of <span class=\"arn\">{EARLIER}</span>" in page
    assert signed_in(ACCOUNT_B).get(execution_page).status_code == 404
    assert signed_in(ACCOUNT_B).get(f"/console/pipelines/{pipeline.name}/").status_code == 404
    account_a.post(f"{execution_page}stop")
    execution.refresh_from_db()
    assert execution.status == "Stopping"


def test_a_steps_job_links_to_its_page_unless_another_account_owns_it(account_a, monkeypatch):
    monkeypatch.setattr("pipelines.services.nudge", lambda execution_id: None)
    definition = json.dumps({"Version": "2020-12-01", "Parameters": [], "Steps": STEPS})
    role = f"arn:aws:iam::{ACCOUNT_A}:role/r"
    services.create_pipeline(ctx(ACCOUNT_A), {"PipelineName": "linked", "PipelineDefinition": definition,
                                              "RoleArn": role})
    execution = services.start_execution(
        ctx(ACCOUNT_A), {"PipelineName": "linked", "ClientRequestToken": "u" * 32}
    )
    own = training_services.create_training_job(ctx(ACCOUNT_A), job_request("step-job"))
    foreign = training_services.create_training_job(ctx(ACCOUNT_B), job_request("their-job"))
    for name, job in (("First", own), ("Second", foreign)):
        PipelineExecutionStep.objects.create(
            execution=execution, step_name=name, step_type="Training", status="Succeeded",
            start_time=execution.creation_time, metadata={"TrainingJob": {"Arn": job.training_job_arn}},
        )

    page = account_a.get(f"/console/pipelines/linked/executions/{execution.execution_id}/").content.decode()

    link = f'<a class="arn" href="/console/training-jobs/step-job/">{own.training_job_arn}</a>'
    assert f"TrainingJob: {link}" in page
    # Another account's job is as absent as a missing one: its ARN stays text.
    assert f'TrainingJob: <span class="arn">{foreign.training_job_arn}</span>' in page
