"""Which steps of an execution may start now, from the steps started so far: a step starts once
every step it depends on (DependsOn, the steps whose properties it reads, the Condition whose
branch it is in) succeeded; a step of the branch a Condition did not take never runs, and
neither does a step depending on one that will never run. Pure Python."""

from pipelines.definition import CONDITION, Definition

SUCCEEDED = "Succeeded"
READY, WAITING, NEVER = "Ready", "Waiting", "Never"


def plan(definition: Definition, statuses: dict[str, str], outcomes: dict[str, bool]) -> dict[str, str]:
    """Each step not started yet: READY (may start now), WAITING (a dependency has not ended) or
    NEVER (a branch not taken, or a dependency that failed, stopped or will never run).
    `statuses`: the started steps' StepStatus; `outcomes`: each Condition's that succeeded."""
    states: dict[str, str] = {}

    def state(name: str) -> str:
        if name in statuses:
            return statuses[name]
        if name not in states:
            states[name] = _state(definition, name, outcomes, state)
        return states[name]

    return {name: state(name) for name in definition.steps if name not in statuses}


def plan_of(definition: Definition, rows: dict) -> dict[str, str]:
    """`plan` from the execution's step rows by name (their status; a Condition's outcome is its
    `Outcome` property)."""
    statuses = {name: row.status for name, row in rows.items()}
    outcomes = {
        name: row.properties.get("Outcome")
        for name, row in rows.items()
        if row.step_type == CONDITION and row.status == SUCCEEDED
    }
    return plan(definition, statuses, outcomes)


def _state(definition: Definition, name: str, outcomes: dict[str, bool], state) -> str:
    step = definition.steps[name]
    if step.branch is not None:
        condition, outcome = step.branch
        if state(condition) == SUCCEEDED and outcomes.get(condition) != outcome:
            return NEVER
    found = {state(dep) for dep in step.dependencies}
    if found <= {SUCCEEDED}:
        return READY
    if found & {NEVER, "Failed", "Stopped"}:
        return NEVER
    return WAITING
