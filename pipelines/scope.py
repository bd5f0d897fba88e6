"""What a running execution's expressions read (expressions.Scope): its parameters, its
execution variables, the properties of its steps that succeeded, and the property files of its
processing steps, read from S3 as the execution's account (the tenancy rule's `location`)."""

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
        try:
            where = s3_tenancy.location(self.execution.pipeline.account_id, uri)
            return json.loads(get_bytes(where.bucket, where.key))
        except StorageError as exc:
            if exc.transient:
                raise  # the store throttling or away: the reconcile loop retries the step later
            raise ExpressionError(
                f"property file {name} of step {step} ({uri}) could not be read: {exc}"
            ) from None
        except ValueError:
            raise ExpressionError(f"property file {name} of step {step} ({uri}) is not JSON") from None
