"""The expressions of a pipeline definition, as the SageMaker Python SDK emits them, found and
evaluated. Pure Python: what they read comes through a `Scope`.

- `{"Get": "Parameters.<name>"}`: the execution's value of a parameter;
- `{"Get": "Execution.<variable>"}`: PipelineExecutionId, PipelineExecutionArn, PipelineName,
  PipelineArn, StartDateTime, CurrentDateTime;
- `{"Get": "Steps.<step>.<property path>"}` (the SDK has written it with and without a
  `Properties.` segment): a property of a step that succeeded (its Describe answer, a Condition's
  Outcome);
- `{"Std:Join": {"On": sep, "Values": [...]}}`: the values as strings, joined;
- `{"Std:JsonGet": {"PropertyFile": {"Get": "Steps.<step>.PropertyFiles.<name>"}, "Path": p}}`:
  the value at `p` in a processing step's property file;
- `{"Std:JsonGet": {"S3Uri": <a string or an expression>, "Path": p}}`: the value at `p` in the
  JSON object at that S3 URI: how the SDK's `DelayedReturn` reads a `@step` function's return
  value (`<the step's OutputDataConfig.S3OutputPath>/results.json`, path `Result...`)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pipelines import paths

EXECUTION_VARIABLES = (
    "PipelineExecutionId",
    "PipelineExecutionArn",
    "PipelineName",
    "PipelineArn",
    "StartDateTime",
    "CurrentDateTime",
)
GET, JOIN, JSON_GET = "Get", "Std:Join", "Std:JsonGet"


class ExpressionError(ValueError):
    """An expression cannot be evaluated (a property missing, a property file unreadable)."""


@dataclass(frozen=True)
class Reference:
    """What a `Get` reads: a parameter, an execution variable, or a step's property (file)."""

    parameter: str | None = None
    variable: str | None = None
    step: str | None = None
    path: str = ""  # the step's property path
    property_file: str | None = None


class Scope(Protocol):
    def parameter(self, name: str) -> object: ...
    def variable(self, name: str) -> object: ...
    def step_property(self, step: str, path: str) -> object: ...
    def property_file(self, step: str, name: str, json_path: str) -> object: ...
    def s3_json(self, uri: str, json_path: str) -> object: ...


def parse_get(target: object) -> Reference:
    if not isinstance(target, str):
        raise ExpressionError(f"Get takes a string, not {target!r}")
    head, _, rest = target.partition(".")
    if head == "Parameters" and rest:
        return Reference(parameter=rest)
    if head == "Execution" and rest in EXECUTION_VARIABLES:
        return Reference(variable=rest)
    if head == "Steps" and rest:
        step, _, path = rest.partition(".")
        if path.startswith("PropertyFiles."):
            return Reference(step=step, property_file=path.removeprefix("PropertyFiles."))
        path = path.removeprefix("Properties.")
        if step and path:
            return Reference(step=step, path=path)
    raise ExpressionError(
        f"'{target}' is not something Get can read (Parameters.<name>, "
        f"Execution.<{'|'.join(EXECUTION_VARIABLES)}>, Steps.<step>.<property>)"
    )


def _function(value: object) -> tuple[str, object] | None:
    """(name, argument) when `value` is an expression rather than a plain object."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, argument),) = value.items()
        if key in (GET, JOIN, JSON_GET) or key.startswith("Std:"):
            return key, argument
    return None


def problems(value: object) -> list[str]:
    """What is wrong with the expressions inside `value` (as much as can be told before a run)."""
    found: list[str] = []
    _walk(value, found, [])
    return found


def references(value: object) -> list[Reference]:
    found: list[Reference] = []
    _walk(value, [], found)
    return found


def _walk(value: object, found_problems: list[str], found_refs: list[Reference]) -> None:
    function = _function(value)
    if function is None:
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            _walk(child, found_problems, found_refs)
        return
    name, argument = function
    try:
        if name == GET:
            found_refs.append(parse_get(argument))
        elif name == JOIN:
            if not isinstance(argument, dict) or not isinstance(argument.get("Values"), list):
                raise ExpressionError('Std:Join takes {"On": separator, "Values": [...]}')
            _walk(argument["Values"], found_problems, found_refs)
        elif name == JSON_GET:
            _json_get_source(argument)
            if "S3Uri" in argument:
                _walk(argument["S3Uri"], found_problems, found_refs)
            else:
                found_refs.append(_json_get_file(argument))
        else:
            raise ExpressionError(f"the function {name} is not supported by Sageport")
    except ExpressionError as exc:
        found_problems.append(f"{exc}.")


def _json_get_source(argument: object) -> None:
    """Std:JsonGet reads a JSON path of one source: a property file or an S3 URI."""
    if not isinstance(argument, dict) or not isinstance(argument.get("Path"), str):
        raise ExpressionError('Std:JsonGet takes {"PropertyFile" or "S3Uri": ..., "Path": json path}')
    if ("S3Uri" in argument) == ("PropertyFile" in argument):
        raise ExpressionError("Std:JsonGet reads either a PropertyFile or an S3Uri, one of them")


def _json_get_file(argument: dict) -> Reference:
    source = argument.get("PropertyFile")
    target = source.get(GET) if isinstance(source, dict) else None
    ref = parse_get(target)
    if ref.property_file is None:
        raise ExpressionError(
            'Std:JsonGet\'s PropertyFile must be {"Get": "Steps.<step>.PropertyFiles.<name>"}'
        )
    return ref


def evaluate(value: object, scope: Scope) -> object:
    """`value` with every expression in it replaced by what it evaluates to."""
    function = _function(value)
    if function is None:
        if isinstance(value, dict):
            return {key: evaluate(child, scope) for key, child in value.items()}
        if isinstance(value, list):
            return [evaluate(child, scope) for child in value]
        return value
    name, argument = function
    if name == GET:
        return _get(parse_get(argument), scope)
    if name == JOIN:
        return str(argument.get("On", "")).join(as_text(evaluate(item, scope)) for item in argument["Values"])
    _json_get_source(argument)
    if "S3Uri" in argument:
        uri = evaluate(argument["S3Uri"], scope)
        if not isinstance(uri, str):
            raise ExpressionError(f"Std:JsonGet's S3Uri must be a string, not {str(uri)[:200]}")
        return scope.s3_json(uri, argument["Path"])
    ref = _json_get_file(argument)
    return scope.property_file(ref.step, ref.property_file, argument["Path"])


def _get(ref: Reference, scope: Scope) -> object:
    if ref.parameter is not None:
        return scope.parameter(ref.parameter)
    if ref.variable is not None:
        return scope.variable(ref.variable)
    return scope.step_property(ref.step, ref.path)


def as_text(value: object) -> str:
    """A value inside Std:Join: booleans as JSON writes them, datetimes in ISO 8601."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (dict, list)):
        raise ExpressionError(f"Std:Join cannot join a structure: {str(value)[:200]}")
    return str(value)


def lookup(document: object, path: str, what: str) -> object:
    """`paths.lookup`, its failure told as an ExpressionError about `what`."""
    try:
        return paths.lookup(document, path)
    except paths.PathError as exc:
        raise ExpressionError(f"{what}: {exc}") from None
