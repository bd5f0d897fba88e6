"""The console's four create forms: model, endpoint config, endpoint, training job. Each is the
few fields a first resource needs, written into the operation's request as a client would."""

from functools import cache

from capacity import instance_types
from console.create_form import NUMBER, PAIRS, SELECT, CreateForm, Field, number, optional, pairs
from hosting.models import Endpoint, EndpointConfig, SageMakerModel
from protocol.context import RequestContext
from protocol.shapes import operation_model
from training.models import TrainingJob

DEFAULT_VARIANT = "AllTraffic"
DEFAULT_CHANNEL = "training"  # the SageMaker Python SDK's channel for a single input
DEFAULT_VOLUME_GB = 30  # the SageMaker Python SDK's default training volume


@cache
def _instance_types(operation: str, *members: str) -> tuple[str, ...]:
    """The instance types the operation's shape allows that this stack can place (the catalog
    knows them): a list to pick from, not the ~300 names a bad value would be told."""
    shape = operation_model("sagemaker", operation).input_shape
    for member in members:
        shape = shape.members[member] if shape.type_name == "structure" else shape.member.members[member]
    known = []
    for name in shape.enum:
        try:
            instance_types.lookup(name)
        except instance_types.UnknownInstanceType:
            continue
        known.append(name)
    return tuple(sorted(known))


def _names(model, name_field: str):
    def choices(ctx: RequestContext) -> list[str]:
        """The account's own resources in the region the form creates in, and no one else's."""
        rows = model.objects.filter(account_id=ctx.account_id, region=ctx.region)
        return list(rows.order_by(name_field).values_list(name_field, flat=True))

    return choices


ROLE_HINT = "arn:aws:iam::<your account>:role/<name>"

MODEL = CreateForm(
    title="Create model",
    noun="model",
    operation="CreateModel",
    fields=(
        Field("name", "Model name", "modelName", mention="model"),
        Field("image", "Container image", "primaryContainer.image", mention="value",
              hint="An image in the local Docker engine, e.g. sageport/python-serve:latest"),
        Field("model_data", "Model data URL", "primaryContainer.modelDataUrl", required=False,
              mention="value", hint="s3://bucket/path/model.tar.gz"),
        Field("role", "Execution role ARN", "executionRoleArn", required=False, mention="value",
              hint=ROLE_HINT),
        Field("environment", "Environment", "primaryContainer.environment", kind=PAIRS,
              required=False, hint="One KEY=VALUE a line"),
    ),
    build=lambda values: {
        "ModelName": values["name"],
        "PrimaryContainer": {
            "Image": values["image"],
            **optional("ModelDataUrl", values["model_data"]),
            **optional("Environment", pairs("environment", values["environment"])),
        },
        **optional("ExecutionRoleArn", values["role"]),
    },
    arn_member="ModelArn",
    model=SageMakerModel,
    arn_field="model_arn",
    page="console:model",
    listing="console:models",
    listing_title="Models",
)

ENDPOINT_CONFIG = CreateForm(
    title="Create endpoint config",
    noun="endpoint config",
    operation="CreateEndpointConfig",
    intro=f"One production variant, {DEFAULT_VARIANT}, taking all the traffic.",
    fields=(
        Field("name", "Endpoint config name", "endpointConfigName", mention="endpoint-config"),
        Field("model", "Model", "productionVariants.modelName", kind=SELECT, mention="model",
              choices=_names(SageMakerModel, "model_name")),
        Field("instance_type", "Instance type", "productionVariants.instanceType", kind=SELECT,
              mention="value", default="ml.m5.large",
              choices=lambda ctx: _instance_types("CreateEndpointConfig", "ProductionVariants",
                                                  "InstanceType")),
        Field("instance_count", "Instance count", "productionVariants.initialInstanceCount",
              kind=NUMBER, default="1"),
    ),
    build=lambda values: {
        "EndpointConfigName": values["name"],
        "ProductionVariants": [
            {
                "VariantName": DEFAULT_VARIANT,
                "ModelName": values["model"],
                "InstanceType": values["instance_type"],
                "InitialInstanceCount": number(values["instance_count"]),
            }
        ],
    },
    arn_member="EndpointConfigArn",
    model=EndpointConfig,
    arn_field="endpoint_config_arn",
    page="console:endpoint-config",
    listing="console:endpoint-configs",
    listing_title="Endpoint configs",
)

ENDPOINT = CreateForm(
    title="Create endpoint",
    noun="endpoint",
    operation="CreateEndpoint",
    fields=(
        Field("name", "Endpoint name", "endpointName", mention="endpoint"),
        Field("config", "Endpoint config", "endpointConfigName", kind=SELECT, mention="endpoint-config",
              choices=_names(EndpointConfig, "endpoint_config_name")),
    ),
    build=lambda values: {"EndpointName": values["name"], "EndpointConfigName": values["config"]},
    arn_member="EndpointArn",
    model=Endpoint,
    arn_field="endpoint_arn",
    page="console:endpoint",
    listing="console:endpoints",
    listing_title="Endpoints",
)

TRAINING_JOB = CreateForm(
    title="Create training job",
    noun="training job",
    operation="CreateTrainingJob",
    fields=(
        Field("name", "Training job name", "trainingJobName", mention="training-job"),
        Field("image", "Training image", "algorithmSpecification.trainingImage", mention="value",
              hint="An image in the local Docker engine"),
        Field("role", "Role ARN", "roleArn", mention="value", hint=ROLE_HINT),
        Field("input", f"Input data S3 URI (channel “{DEFAULT_CHANNEL}”)",
              "inputDataConfig.dataSource.s3DataSource.s3Uri", required=False, mention="value",
              hint="s3://bucket/prefix/"),
        Field("output", "Output S3 path", "outputDataConfig.s3OutputPath", mention="value",
              hint="s3://bucket/prefix: the model artifacts go to <path>/<job name>/output/"),
        Field("instance_type", "Instance type", "resourceConfig.instanceType", kind=SELECT,
              mention="value", default="ml.m5.large",
              choices=lambda ctx: _instance_types("CreateTrainingJob", "ResourceConfig", "InstanceType")),
        Field("instance_count", "Instance count", "resourceConfig.instanceCount", kind=NUMBER, default="1"),
        Field("max_runtime", "Max runtime (seconds)", "stoppingCondition.maxRuntimeInSeconds",
              kind=NUMBER, default="3600"),
        Field("hyperparameters", "Hyperparameters", "hyperParameters", kind=PAIRS, required=False,
              hint="One KEY=VALUE a line"),
    ),
    build=lambda values: {
        "TrainingJobName": values["name"],
        "AlgorithmSpecification": {"TrainingImage": values["image"], "TrainingInputMode": "File"},
        "RoleArn": values["role"],
        **optional("InputDataConfig", _channels(values["input"])),
        "OutputDataConfig": {"S3OutputPath": values["output"]},
        "ResourceConfig": {
            "InstanceType": values["instance_type"],
            "InstanceCount": number(values["instance_count"]),
            "VolumeSizeInGB": DEFAULT_VOLUME_GB,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": number(values["max_runtime"])},
        **optional("HyperParameters", pairs("hyperparameters", values["hyperparameters"])),
    },
    arn_member="TrainingJobArn",
    model=TrainingJob,
    arn_field="training_job_arn",
    page="console:training-job",
    listing="console:training-jobs",
    listing_title="Training jobs",
)


def _channels(uri: str) -> list[dict]:
    if not uri:
        return []
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    return [{"ChannelName": DEFAULT_CHANNEL, "DataSource": {"S3DataSource": source}}]
