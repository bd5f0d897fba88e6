"""The step types that create a SageMaker resource, each as the operations that make, read and
stop it: a step's Arguments are the create request less the resource's name, which the
execution chooses; its properties are the Describe answer (the SDK's `step.properties.…`)."""

from dataclasses import dataclass

from botocore.model import Shape

from protocol.shapes import operation_model

# A job's status → its step's (StepStatus).
JOB_STEP_STATUS = {
    "InProgress": "Executing",
    "Completed": "Succeeded",
    "Failed": "Failed",
    "Stopping": "Stopping",
    "Stopped": "Stopped",
}


@dataclass(frozen=True)
class Kind:
    create: str
    describe: str
    name_member: str  # the resource's name in the create request (and the Describe request)
    arn_member: str  # its ARN in the create answer
    metadata_key: str  # its member of PipelineExecutionStepMetadata
    stop: str = ""  # a job: stopped with this operation; runs until its status member says it ended
    status_member: str = ""
    name_limit: int = 63  # the longest name the resource may have
    # An operation listing the job's children, whose answer is part of the step's properties
    # (a tuning step's TrainingJobSummaries: the SDK's TuningStep.properties shapes).
    children: str = ""


KINDS: dict[str, Kind] = {
    "Training": Kind(
        "CreateTrainingJob",
        "DescribeTrainingJob",
        "TrainingJobName",
        "TrainingJobArn",
        "TrainingJob",
        "StopTrainingJob",
        "TrainingJobStatus",
    ),
    "Processing": Kind(
        "CreateProcessingJob",
        "DescribeProcessingJob",
        "ProcessingJobName",
        "ProcessingJobArn",
        "ProcessingJob",
        "StopProcessingJob",
        "ProcessingJobStatus",
    ),
    "Transform": Kind(
        "CreateTransformJob",
        "DescribeTransformJob",
        "TransformJobName",
        "TransformJobArn",
        "TransformJob",
        "StopTransformJob",
        "TransformJobStatus",
    ),
    # TuningStep: a hyperparameter tuning job (32 characters of name at most), made by the tuning
    # feature's handler; its properties add TrainingJobSummaries, the best first.
    "Tuning": Kind(
        "CreateHyperParameterTuningJob",
        "DescribeHyperParameterTuningJob",
        "HyperParameterTuningJobName",
        "HyperParameterTuningJobArn",
        "TuningJob",
        "StopHyperParameterTuningJob",
        "HyperParameterTuningJobStatus",
        name_limit=32,
        children="ListTrainingJobsForHyperParameterTuningJob",
    ),
    # SDK v2's ModelStep(step_args=model.create()) and the older CreateModelStep.
    "Model": Kind("CreateModel", "DescribeModel", "ModelName", "ModelArn", "Model"),
    # ModelStep(step_args=model.register()) and RegisterModel: a version in a model package group,
    # read back by its ARN (the request names the group, not the package).
    "RegisterModel": Kind(
        "CreateModelPackage", "DescribeModelPackage", "ModelPackageName", "ModelPackageArn", "RegisterModel"
    ),
}


# The steps that run a job (a status to follow): SageMaker's job retry types apply to them.
JOB_KINDS = frozenset(name for name, kind in KINDS.items() if kind.status_member)


def missing_arguments(step_type: str, arguments: dict) -> list[str]:
    """The members its create request requires that a step's Arguments lack (the resource's name
    excepted: the execution gives it)."""
    kind = KINDS[step_type]
    required = operation_model("sagemaker", kind.create).input_shape.required_members
    return [member for member in required if member != kind.name_member and member not in arguments]


def properties_shapes(step_type: str) -> tuple[Shape, ...]:
    """The shapes of a step's properties: its Describe answer's, and its children's list (none for
    Condition and Fail)."""
    kind = KINDS.get(step_type)
    if kind is None:
        return ()
    operations = (kind.describe, kind.children) if kind.children else (kind.describe,)
    return tuple(operation_model("sagemaker", operation).output_shape for operation in operations)
