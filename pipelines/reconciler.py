"""The reconciler of a pipeline execution: one step looks at every step started so far, moves
each as far as it goes, and starts the steps whose dependencies all succeeded. Level-triggered:
what a look does follows from the rows and the jobs it reads, so a look run twice, or after a
worker died mid-look, does the same.

Executing: follow the running steps; start the ready ones (at most MaxParallelExecutionSteps
running at once); once a step failed, start no other, and when none runs the execution is Failed
with the failed steps named. Succeeded when no step runs and none may start. Stopping: stop every
running step's job; Stopped once none runs."""

from django.conf import settings

from pipelines import graph, steps, transitions
from pipelines.definition import Definition, parse
from pipelines.models import ExecutionStatus as Status
from pipelines.models import PipelineExecution, PipelineExecutionStep, StepStatus
from pipelines.scope import ExecutionScope
from reconcile.loop import reconcile_once

# SageMaker's words for an execution a step failed (DescribePipelineExecution's FailureReason).
STEP_FAILURE = "Step failure: One or multiple steps failed."


def reconcile(execution_id: int) -> float | None:
    return reconcile_once(
        PipelineExecution, execution_id, _step, give_up=_give_up, finished=lambda row: row.is_terminal
    )


def _poll() -> float:
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS


def _step(execution: PipelineExecution, token: str) -> float | None:
    definition = parse(execution.definition)
    rows = {row.step_name: row for row in execution.steps.all()}
    if execution.status == Status.STOPPING:
        return _stop(execution, rows)
    scope = ExecutionScope(execution, definition, rows)
    for row in rows.values():
        if not row.ended:
            steps.advance(row, definition.steps[row.step_name], scope)
    failed = [row for row in rows.values() if row.status in (StepStatus.FAILED, StepStatus.STOPPED)]
    started = _start_ready(execution, definition, rows, scope) if not failed else False
    running = [row for row in rows.values() if not row.ended]
    if started or running:
        return 0.0 if started else _poll()
    if failed:
        transitions.transition(execution, Status.FAILED, failure_reason=_failure_reason(failed))
    else:
        transitions.transition(execution, Status.SUCCEEDED)
    return None


def _start_ready(
    execution: PipelineExecution,
    definition: Definition,
    rows: dict[str, PipelineExecutionStep],
    scope: ExecutionScope,
) -> bool:
    """Record and launch the steps that may start now; whether any was (the next look comes at
    once, to follow what they made and start what they unblocked)."""
    planned = graph.plan_of(definition, rows)
    ready = [name for name, state in planned.items() if state == graph.READY]
    limit = (execution.parallelism_configuration or {}).get("MaxParallelExecutionSteps")
    if limit is not None:
        running = sum(1 for row in rows.values() if not row.ended)
        ready = ready[: max(0, limit - running)]
    started = False
    for name in ready:
        row = steps.record(execution, definition.steps[name])
        if row is None:
            continue
        rows[name] = row
        steps.advance(row, definition.steps[name], scope)
        started = True
    return started


def _failure_reason(failed: list[PipelineExecutionStep]) -> str:
    named = "; ".join(
        f"{row.step_name} ({row.step_type}): {row.failure_reason or row.status}" for row in failed
    )
    return f"{STEP_FAILURE} {named}"[:1300]


def _stop(execution: PipelineExecution, rows: dict[str, PipelineExecutionStep]) -> float | None:
    running = [row for row in rows.values() if not row.ended]
    for row in running:
        steps.stop(row, execution)
    if any(not row.ended for row in running):
        return _poll()
    transitions.transition(execution, Status.STOPPED)
    return None


def _give_up(execution: PipelineExecution, reason: str) -> float | None:
    """A look failed for good (a bug, a permanent store error): the execution fails with it; its
    running jobs are stopped."""
    for row in execution.steps.all():
        if not row.ended:
            try:
                steps.stop(row, execution)
            except Exception:  # noqa: BLE001 - failing the execution matters more than each stop
                continue
    transitions.transition(execution, Status.FAILED, failure_reason=reason[:1300])
    return None
