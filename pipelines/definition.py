"""A pipeline definition, as the SageMaker Python SDK writes it (Version 2020-12-01): parsed once
into what the engine needs, and every mistake told at CreatePipeline as a ValidationException
naming it (SageMaker validates the definition when the pipeline is created or updated).

What is understood: Parameters (String, Integer, Float, Boolean), Steps of the types in
`kinds.KINDS` plus Condition (IfSteps/ElseSteps nest whole steps) and Fail, DependsOn, and the
expressions of `expressions.py`. A `@step` function of the SDK is a Training step (its job runs
the SDK's remote-function runner; its return value is read by `Std:JsonGet` on an S3Uri). What
SageMaker has and Sageport does not run is refused with its name rather than accepted and skipped:
the other step types. CacheConfig (caching.py) and RetryPolicies (retries.py) are understood on
the steps that make a resource."""

import json
from dataclasses import dataclass, field
from datetime import timedelta

from botocore.model import Shape

from pipelines import caching, conditions, expressions, kinds, paths, retries
from protocol.errors import ValidationException

VERSION = "2020-12-01"
PARAMETER_TYPES = ("String", "Integer", "Float", "Boolean")
CONDITION, FAIL = "Condition", "Fail"
# SageMaker's step types Sageport does not run (AWS docs: "Pipeline steps").
UNSUPPORTED_TYPES = (
    "Lambda",
    "Callback",
    "QualityCheck",
    "ClarifyCheck",
    "EMR",
    "EMRServerless",
    "AutoML",
    "Notebook",
    "Endpoint",
    "EndpointConfig",
    "Cleanup",
    "ForEach",
)
_STEP_MEMBERS = {
    "Name",
    "Type",
    "Arguments",
    "DependsOn",
    "DisplayName",
    "Description",
    "PropertyFiles",
    "CacheConfig",
    "RetryPolicies",
}


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: object = None  # None: no default, the execution must give it

    def value(self, given: str | None) -> object:
        """The typed value of the parameter for an execution given `given` (a string, or None)."""
        if given is None:
            return self.default
        return typed(self.type, given, self.name)


@dataclass(frozen=True)
class Step:
    name: str
    type: str
    arguments: dict
    depends_on: tuple[str, ...] = ()
    property_files: tuple[dict, ...] = ()
    # A step of a Condition's branch: (the condition's name, True for IfSteps, False for ElseSteps).
    branch: tuple[str, bool] | None = None
    display_name: str = ""
    description: str = ""
    cached: bool = False  # CacheConfig.Enabled
    cache_expire_after: timedelta | None = None  # CacheConfig.ExpireAfter; None: any age
    retry_policies: tuple[retries.RetryPolicy, ...] = ()

    @property
    def references(self) -> frozenset[str]:
        """The steps whose properties (or property files) its arguments read."""
        return frozenset(ref.step for ref in expressions.references(self.evaluated) if ref.step)

    @property
    def evaluated(self) -> object:
        """What of its Arguments the step itself evaluates: a Condition's branches are steps of
        their own."""
        return self.arguments.get("Conditions") if self.type == CONDITION else self.arguments

    @property
    def dependencies(self) -> frozenset[str]:
        """What must have succeeded before it starts: DependsOn, what it reads, its condition."""
        found = set(self.depends_on) | self.references
        if self.branch:
            found.add(self.branch[0])
        return frozenset(found)


@dataclass(frozen=True)
class Definition:
    parameters: dict[str, Parameter]
    steps: dict[str, Step] = field(default_factory=dict)  # every step, branches' included, in order
    experiment_config: dict | None = None


def typed(parameter_type: str, value: object, name: str) -> object:
    try:
        if parameter_type == "Integer" and not isinstance(value, bool):
            return int(value)
        if parameter_type == "Float" and not isinstance(value, bool):
            return float(value)
        if parameter_type == "Boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise ValueError(value)
        if parameter_type == "String":
            return str(value)
    except ValueError:
        pass
    raise ValidationException(f"Parameter '{name}' of type {parameter_type} cannot take the value '{value}'.")


def parse(text: str) -> Definition:
    """The definition in `text`; ValidationException listing what is wrong with it."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ValidationException(f"The pipeline definition is not valid JSON: {exc}.") from None
    if not isinstance(document, dict):
        raise ValidationException("The pipeline definition must be a JSON object.")
    problems: list[str] = []
    if document.get("Version") != VERSION:
        problems.append(f"Version must be '{VERSION}' (it is {document.get('Version')!r}).")
    parameters = _parameters(document.get("Parameters", []), problems)
    steps: dict[str, Step] = {}
    raw_steps = document.get("Steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        problems.append("Steps must be a non-empty list of steps.")
    else:
        _add_steps(raw_steps, None, steps, problems)
    definition = Definition(parameters, steps, document.get("PipelineExperimentConfig"))
    if not problems:
        problems += _reference_problems(definition)
    if not problems:  # a cycle is looked for among steps that all exist
        problems += _cycle_problems(definition)
    if problems:
        raise ValidationException("Invalid pipeline definition: " + " ".join(problems[:20]))
    return definition


def _parameters(raw: object, problems: list[str]) -> dict[str, Parameter]:
    found: dict[str, Parameter] = {}
    if not isinstance(raw, list):
        problems.append("Parameters must be a list.")
        return found
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("Name"), str):
            problems.append(f"A parameter must be an object with a Name: {item!r}.")
            continue
        name, kind = item["Name"], item.get("Type", "String")
        if kind not in PARAMETER_TYPES:
            problems.append(
                f"Parameter '{name}' has type {kind!r}; give one of {', '.join(PARAMETER_TYPES)}."
            )
            continue
        if name in found:
            problems.append(f"Parameter '{name}' is defined twice.")
        default = item.get("DefaultValue")
        try:
            found[name] = Parameter(name, kind, None if default is None else typed(kind, default, name))
        except ValidationException as exc:
            problems.append(f"{exc.message[:-1]} as its DefaultValue.")
    return found


def _add_steps(
    raw: list, branch: tuple[str, bool] | None, steps: dict[str, Step], problems: list[str]
) -> None:
    for item in raw:
        step = _step(item, branch, problems)
        if step is None:
            continue
        if step.name in steps:
            problems.append(f"Step names must be unique: '{step.name}' is used twice.")
        steps[step.name] = step
        if step.type == CONDITION:
            for member, outcome in (("IfSteps", True), ("ElseSteps", False)):
                nested = step.arguments.get(member, [])
                if not isinstance(nested, list):
                    problems.append(f"Step '{step.name}': {member} must be a list of steps.")
                    continue
                _add_steps(nested, (step.name, outcome), steps, problems)


def _step(item: object, branch: tuple[str, bool] | None, problems: list[str]) -> Step | None:
    if not isinstance(item, dict) or not isinstance(item.get("Name"), str) or not item.get("Name"):
        problems.append(f"A step must be an object with a Name: {str(item)[:200]}.")
        return None
    name, kind = item["Name"], item.get("Type")
    unknown = sorted(set(item) - _STEP_MEMBERS)
    if unknown:
        problems.append(f"Step '{name}' has unknown members: {', '.join(unknown)}.")
    if kind in UNSUPPORTED_TYPES:
        problems.append(f"Step '{name}': step type {kind} is not supported by Sageport.")
    elif kind not in kinds.KINDS and kind not in (CONDITION, FAIL):
        problems.append(f"Step '{name}': unknown step type {kind!r}.")
    cached, expire_after = _cache_config(item.get("CacheConfig"), kind, name, problems)
    policy_problems: list[str] = []
    retry_policies = retries.parse(item.get("RetryPolicies"), kind in kinds.JOB_KINDS, policy_problems)
    if retry_policies and kind not in kinds.KINDS:
        policy_problems.append(f"a {kind} step makes no resource to retry; RetryPolicies are for job steps.")
    problems += [f"Step '{name}': {problem}" for problem in policy_problems]
    arguments = item.get("Arguments", {})
    if not isinstance(arguments, dict):
        problems.append(f"Step '{name}': Arguments must be an object.")
        arguments = {}
    depends_on = item.get("DependsOn", [])
    if not isinstance(depends_on, list) or not all(isinstance(dep, str) for dep in depends_on):
        problems.append(f"Step '{name}': DependsOn must be a list of step names.")
        depends_on = []
    property_files = item.get("PropertyFiles", [])
    if property_files and kind != "Processing":
        problems.append(f"Step '{name}': only Processing steps have PropertyFiles.")
    step = Step(
        name,
        kind,
        arguments,
        tuple(depends_on),
        tuple(property_files),
        branch,
        item.get("DisplayName", ""),
        item.get("Description", ""),
        cached,
        expire_after,
        retry_policies,
    )
    found = expressions.problems(step.evaluated)
    if kind in kinds.KINDS and kinds.missing_arguments(kind, arguments):
        missing = ", ".join(kinds.missing_arguments(kind, arguments))
        found.append(f"Arguments lack what {kinds.KINDS[kind].create} requires: {missing}.")
    if kind == CONDITION:
        found += conditions.problems(arguments.get("Conditions"))
    if kind == FAIL and not isinstance(arguments.get("ErrorMessage", ""), (str, dict)):
        found.append("ErrorMessage must be a string or an expression.")
    problems += [f"Step '{name}': {problem}" for problem in found]
    return step


def _cache_config(
    config: object, kind: object, name: str, problems: list[str]
) -> tuple[bool, timedelta | None]:
    """(Enabled, ExpireAfter) of a step's CacheConfig; caching is off without one."""
    if config is None:
        return False, None
    if not isinstance(config, dict) or not isinstance(config.get("Enabled", False), bool):
        problems.append(f"Step '{name}': CacheConfig must be an object with a boolean Enabled.")
        return False, None
    if not config.get("Enabled"):
        return False, None
    if kind not in kinds.KINDS:
        problems.append(f"Step '{name}': a {kind} step has no job to cache; CacheConfig is for job steps.")
    expire_after = None
    if "ExpireAfter" in config:
        expire_after = caching.duration(config["ExpireAfter"])
        if expire_after is None:
            problems.append(
                f"Step '{name}': CacheConfig.ExpireAfter {config['ExpireAfter']!r} is not an ISO 8601 "
                "duration (e.g. PT1H, P30D)."
            )
    return True, expire_after


def _reference_problems(definition: Definition) -> list[str]:
    problems = []
    for step in definition.steps.values():
        for dep in step.depends_on:
            if dep not in definition.steps:
                problems.append(f"Step '{step.name}' DependsOn '{dep}', which is not a step of the pipeline.")
        for ref in expressions.references(step.evaluated):
            if ref.parameter is not None and ref.parameter not in definition.parameters:
                problems.append(f"Step '{step.name}' uses parameter '{ref.parameter}', which is not defined.")
            if ref.step is None:
                continue
            target = definition.steps.get(ref.step)
            if target is None:
                problems.append(
                    f"Step '{step.name}' reads step '{ref.step}', which is not a step of the pipeline."
                )
            elif ref.property_file is not None:
                names = [found.get("PropertyFileName") for found in target.property_files]
                if ref.property_file not in names:
                    problems.append(
                        f"Step '{step.name}' reads property file '{ref.property_file}', which step "
                        f"'{ref.step}' does not define."
                    )
            else:
                problem = _property_problem(kinds.properties_shapes(target.type), ref.path)
                if problem:
                    problems.append(
                        f"Step '{step.name}' reads a property step '{ref.step}' does not have: {problem}."
                    )
    return problems


def _property_problem(shapes: tuple[Shape, ...], path: str) -> str | None:
    """What is wrong with `path` in every shape of the step's properties; None: one has it."""
    if not shapes:  # Condition: its Outcome only; Fail: none
        return None if path == "Outcome" else f"'{path}'"
    found = [paths.shape_problem(shape, path) for shape in shapes]
    return None if None in found else found[0]


def _cycle_problems(definition: Definition) -> list[str]:
    """A step that depends on itself, through any chain of dependencies, can never start."""
    state: dict[str, str] = {}
    cycle: list[str] = []

    def visit(name: str, trail: list[str]) -> bool:
        if state.get(name) == "done":
            return False
        if state.get(name) == "visiting":
            cycle.extend(trail[trail.index(name) :] + [name])
            return True
        state[name] = "visiting"
        for dep in sorted(definition.steps[name].dependencies):
            if visit(dep, trail + [name]):
                return True
        state[name] = "done"
        return False

    for name in definition.steps:
        if visit(name, []):
            return [f"The steps depend on each other in a cycle: {' -> '.join(cycle)}."]
    return []
