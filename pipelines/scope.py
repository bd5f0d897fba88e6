"""What a running execution's expressions read (expressions.Scope): its parameters, its
execution variables, the properties of its steps that succeeded, the property files of its
processing steps and the JSON objects `Std:JsonGet` names by S3 URI (a `@step` function's
results.json), read from S3 as the execution's account (the tenancy rule's `location`)."""

import json

from django.utils import timezone

from accounts import s3_tenancy
from pipelines.definition import Definition
from pipelines.expressions import ExpressionError, lookup
from pipelines.models import PipelineExecution, PipelineExecutionStep, StepStatus
from storage.s3 import StorageError, get_bytes


class ExecutionScope:
    def __init__(
        self, execution: PipelineExecution, definition: Definition, rows: dict[str, PipelineExecutionStep]
    ):
        self.execution = execution
        self.definition = definition
        self.rows = rows
        self._values = {item["Name"]: item["Value"] for item in execution.parameters}
        self._files: dict[tuple[str, str], object] = {}
        self._objects: dict[str, object] = {}  # S3 URI → its JSON, read once a look

    def parameter(self, name: str) -> object:
        return self.definition.parameters[name].value(self._values.get(name))

    def variable(self, name: str) -> object:
        execution = self.execution
        return {
            "PipelineExecutionId": execution.execution_id,
            "PipelineExecutionArn": execution.arn,
            "PipelineName": execution.pipeline.name,
            "PipelineArn": execution.pipeline.arn,
            "StartDateTime": execution.creation_time,
            "CurrentDateTime": timezone.now(),
        }[name]

    def step_property(self, step: str, path: str) -> object:
        row = self.rows.get(step)
        if row is None or row.status != StepStatus.SUCCEEDED:
            raise ExpressionError(f"step {step} has not succeeded, so its properties cannot be read")
        return lookup(row.properties, path, f"step {step}'s property {path}")

    def property_file(self, step: str, name: str, json_path: str) -> object:
        key = (step, name)
        if key not in self._files:
            self._files[key] = self._read_file(step, name)
        return lookup(self._files[key], json_path, f"property file {name} of step {step}, path {json_path}")

    def s3_json(self, uri: str, json_path: str) -> object:
        if uri not in self._objects:
            self._objects[uri] = self._read_json(uri, f"the JSON object at {uri}")
        return lookup(self._objects[uri], json_path, f"the JSON object at {uri}, path {json_path}")

    def _read_file(self, step: str, name: str) -> object:
        """The JSON file at FilePath under the processing output the PropertyFile names."""
        spec = next(
            found
            for found in self.definition.steps[step].property_files
            if found.get("PropertyFileName") == name
        )
        output = self.step_property(
            step, f"ProcessingOutputConfig.Outputs['{spec['OutputName']}'].S3Output.S3Uri"
        )
        uri = f"{str(output).rstrip('/')}/{spec['FilePath'].lstrip('/')}"
        return self._read_json(uri, f"property file {name} of step {step} ({uri})")

    def _read_json(self, uri: str, what: str) -> object:
        """The JSON document at `uri`, read as the pipeline's account; ExpressionError naming
        `what` when it is missing, foreign or not JSON."""
        try:
            where = s3_tenancy.location(self.execution.pipeline.account_id, uri)
            return json.loads(get_bytes(where.bucket, where.key))
        except StorageError as exc:
            if exc.transient:
                raise  # the store throttling or away: the reconcile loop retries the step later
            raise ExpressionError(f"{what} could not be read: {exc}") from None
        except ValueError:
            raise ExpressionError(f"{what} is not JSON") from None
