"""The order a List operation answers in when the request names no SortBy/SortOrder is the one its
botocore documentation names (e.g. ListClusters' SortOrder: "The default value is Ascending.";
ListModels': "The default is Descending."; ListClusterSchedulerConfigs': "By default, listed in
Descending order"). Data-driven: every served operation whose input has SortOrder is walked, so a
List operation added later is checked as soon as it is registered (it must add a maker here)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from batchtransform.models import TransformJob
from clusters.models import Cluster, ClusterMember, ClusterPolicy
from hosting.models import Endpoint, EndpointConfig, EndpointDeployment, InferenceComponent, SageMakerModel
from modelregistry.models import ModelPackage, ModelPackageGroup
from pipelines.models import Pipeline, PipelineExecution, PipelineExecutionStep
from processing.models import ProcessingJob
from protocol import registry, shapes
from protocol.listing import UNDOCUMENTED_ORDER, default_order, documented_order
from tests.unit.clusters.helpers import CTX, ROLE, call, group, register_node
from training.models import TrainingJob
from tuning.models import HyperParameterTuningJob, TuningTrainingJob

SORTED_LISTS = sorted(
    name
    for service, name in registry.served()
    if "SortOrder" in shapes.operation_model(service.botocore_name, name).input_shape.members
    # Search sorts by any property (its SortBy is free text, not an enum): its defaults are
    # checked with it, tests/unit/modelregistry/test_search.py.
    and name != "Search"
)
OLDER, NEWER = "older", "newer"


def _aged(model, name_field: str, time_field: str = "creation_time", **scope) -> None:
    """Makes OLDER an hour older than NEWER (created second, so the pk order is the other way)."""
    now = timezone.now()
    for name, age in ((OLDER, timedelta(hours=1)), (NEWER, timedelta(0))):
        model.objects.filter(**{name_field: name}, **scope).update(**{time_field: now - age})


def _training_jobs() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        TrainingJob.objects.create(
            account_id=CTX.account_id, region=CTX.region, training_job_name=name, request={},
            creation_time=timezone.now(), last_modified_time=timezone.now(),
            training_job_arn=f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}:training-job/{name}",
        )
    _aged(TrainingJob, "training_job_name")
    return {}, "TrainingJobSummaries", "TrainingJobName"


def _processing_jobs() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        ProcessingJob.objects.create(
            account_id=CTX.account_id, region=CTX.region, processing_job_name=name, request={},
            creation_time=timezone.now(), last_modified_time=timezone.now(),
            processing_job_arn=f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}:processing-job/{name}",
        )
    _aged(ProcessingJob, "processing_job_name")
    return {}, "ProcessingJobSummaries", "ProcessingJobName"


def _transform_jobs() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        TransformJob.objects.create(
            account_id=CTX.account_id, region=CTX.region, transform_job_name=name, request={}, model={},
            creation_time=timezone.now(), last_modified_time=timezone.now(),
            transform_job_arn=f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}:transform-job/{name}",
        )
    _aged(TransformJob, "transform_job_name")
    return {}, "TransformJobSummaries", "TransformJobName"


def _models() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        container = {"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/serve:1"}
        call("CreateModel", ModelName=name, PrimaryContainer=container, ExecutionRoleArn=ROLE)
    _aged(SageMakerModel, "model_name")
    return {}, "Models", "ModelName"


def _endpoint_configs() -> tuple[dict, str, str]:
    call("CreateModel", ModelName="m", PrimaryContainer={"Image": "serve:1"}, ExecutionRoleArn=ROLE)
    variant = {"VariantName": "v", "ModelName": "m", "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}
    for name in (NEWER, OLDER):
        call("CreateEndpointConfig", EndpointConfigName=name, ProductionVariants=[variant])
    _aged(EndpointConfig, "endpoint_config_name")
    return {}, "EndpointConfigs", "EndpointConfigName"


def _endpoints() -> tuple[dict, str, str]:
    _endpoint_configs()
    for name in (NEWER, OLDER):
        call("CreateEndpoint", EndpointName=name, EndpointConfigName=OLDER)
    _aged(Endpoint, "endpoint_name")
    return {}, "Endpoints", "EndpointName"


def _inference_components() -> tuple[dict, str, str]:
    variant = {"VariantName": "v", "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}
    call("CreateEndpointConfig", EndpointConfigName="shared", ExecutionRoleArn=ROLE,
         ProductionVariants=[variant])
    call("CreateEndpoint", EndpointName="shared", EndpointConfigName="shared")
    # What the worker (not running here) does once the endpoint's instances are up.
    Endpoint.objects.filter(endpoint_name="shared").update(endpoint_status="InService")
    EndpointDeployment.objects.filter(endpoint__endpoint_name="shared").update(phase="Active")
    call("CreateModel", ModelName="m", PrimaryContainer={"Image": "serve:1"}, ExecutionRoleArn=ROLE)
    specification = {"ModelName": "m", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 128}}
    for name in (NEWER, OLDER):
        call("CreateInferenceComponent", InferenceComponentName=name, EndpointName="shared", VariantName="v",
             Specification=specification, RuntimeConfig={"CopyCount": 1})
    _aged(InferenceComponent, "inference_component_name")
    return {}, "InferenceComponents", "InferenceComponentName"


def _clusters() -> tuple[dict, str, str]:
    register_node("gpu-a")
    for name in (NEWER, OLDER):
        call("CreateCluster", ClusterName=name, InstanceGroups=[group()])
    _aged(Cluster, "cluster_name")
    return {}, "ClusterSummaries", "ClusterName"


def _cluster_nodes() -> tuple[dict, str, str]:
    register_node("gpu-a")
    register_node("gpu-b")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group(NEWER), group(OLDER)])
    _aged(ClusterMember, "group__name", "launch_time")
    return {"ClusterName": "c"}, "ClusterNodeSummaries", "InstanceGroupName"


def _scheduler_configs() -> tuple[dict, str, str]:
    classes = [{"Name": "training", "Weight": 40}]
    # One cluster policy per cluster: the second is made on a cluster of its own.
    register_node("gpu-a")
    register_node("gpu-b")
    for name in (NEWER, OLDER):
        arn = call("CreateCluster", ClusterName=f"c-{name}", InstanceGroups=[group()])["ClusterArn"]
        config = {"PriorityClasses": classes}
        call("CreateClusterSchedulerConfig", Name=name, ClusterArn=arn, SchedulerConfig=config)
    _aged(ClusterPolicy, "name")
    return {}, "ClusterSchedulerConfigSummaries", "Name"


def _compute_quotas() -> tuple[dict, str, str]:
    register_node("gpu-a")
    arn = call("CreateCluster", ClusterName="c", InstanceGroups=[group()])["ClusterArn"]
    resources = [{"InstanceType": "ml.g5.12xlarge", "Count": 1}]
    for name in (NEWER, OLDER):  # one quota per team and cluster: a team each
        target = {"TeamName": f"team-{name}"}
        call("CreateComputeQuota", Name=name, ClusterArn=arn, ComputeQuotaTarget=target,
             ComputeQuotaConfig={"ComputeQuotaResources": resources})
    _aged(ClusterPolicy, "name")
    return {}, "ComputeQuotaSummaries", "Name"


def _model_package_groups() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        call("CreateModelPackageGroup", ModelPackageGroupName=name)
    _aged(ModelPackageGroup, "model_package_group_name")
    return {}, "ModelPackageGroupSummaryList", "ModelPackageGroupName"


def _model_packages() -> tuple[dict, str, str]:
    specification = {"Containers": [{"Image": "serve:1"}]}
    for name in (NEWER, OLDER):  # unversioned: what ListModelPackages lists by default
        call("CreateModelPackage", ModelPackageName=name, InferenceSpecification=specification)
    _aged(ModelPackage, "model_package_name")
    return {}, "ModelPackageSummaryList", "ModelPackageName"


def _tuning_job(name: str) -> HyperParameterTuningJob:
    config = {
        "Strategy": "Random",
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 1},
        "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
    }
    return HyperParameterTuningJob.objects.create(
        account_id=CTX.account_id, region=CTX.region, name=name, seed=1,
        request={
            "HyperParameterTuningJobName": name,
            "HyperParameterTuningJobConfig": config,
            "TrainingJobDefinition": {},  # what a summary needs of it: that there is one
        },
        creation_time=timezone.now(), last_modified_time=timezone.now(),
        arn=f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}:hyper-parameter-tuning-job/{name}",
    )


def _tuning_jobs() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        _tuning_job(name)
    _aged(HyperParameterTuningJob, "name")
    return {}, "HyperParameterTuningJobSummaries", "HyperParameterTuningJobName"


def _tuning_job_training_jobs() -> tuple[dict, str, str]:
    tuning_job = _tuning_job("t")
    _training_jobs()
    for number, name in enumerate((NEWER, OLDER), start=1):
        TuningTrainingJob.objects.create(
            tuning_job=tuning_job, number=number, training_job_name=name, tuned_hyperparameters={}
        )
    TrainingJob.objects.update(request={"AlgorithmSpecification": {}})
    return {"HyperParameterTuningJobName": "t"}, "TrainingJobSummaries", "TrainingJobName"


def _pipeline(name: str) -> Pipeline:
    return Pipeline.objects.create(
        account_id=CTX.account_id, region=CTX.region, name=name, display_name=name, definition="{}",
        role_arn=ROLE, creation_time=timezone.now(), last_modified_time=timezone.now(),
        arn=f"arn:aws:sagemaker:{CTX.region}:{CTX.account_id}:pipeline/{name}",
    )


def _pipelines() -> tuple[dict, str, str]:
    for name in (NEWER, OLDER):
        _pipeline(name)
    _aged(Pipeline, "name")
    return {}, "PipelineSummaries", "PipelineName"


def _pipeline_execution(pipeline: Pipeline, name: str) -> PipelineExecution:
    return PipelineExecution.objects.create(
        pipeline=pipeline, arn=f"{pipeline.arn}/execution/{name}", execution_id=name, display_name=name,
        definition="{}", role_arn=ROLE, creation_time=timezone.now(), last_modified_time=timezone.now(),
    )


def _pipeline_executions() -> tuple[dict, str, str]:
    pipeline = _pipeline("p")
    for name in (NEWER, OLDER):
        _pipeline_execution(pipeline, name)
    _aged(PipelineExecution, "display_name")
    return {"PipelineName": "p"}, "PipelineExecutionSummaries", "PipelineExecutionDisplayName"


def _pipeline_execution_steps() -> tuple[dict, str, str]:
    execution = _pipeline_execution(_pipeline("p"), "e")
    for name in (NEWER, OLDER):
        PipelineExecutionStep.objects.create(
            execution=execution, step_name=name, step_type="Fail", start_time=timezone.now()
        )
    _aged(PipelineExecutionStep, "step_name", time_field="start_time")
    return {"PipelineExecutionArn": execution.arn}, "PipelineExecutionSteps", "StepName"


# Per operation: make an OLDER and a NEWER resource; answer the request's other required members,
# the list member of the answer and the member that names a resource in it.
MAKERS = {
    "ListTrainingJobs": _training_jobs,
    "ListProcessingJobs": _processing_jobs,
    "ListTransformJobs": _transform_jobs,
    "ListModels": _models,
    "ListEndpointConfigs": _endpoint_configs,
    "ListEndpoints": _endpoints,
    "ListInferenceComponents": _inference_components,
    "ListClusters": _clusters,
    "ListClusterNodes": _cluster_nodes,
    "ListClusterSchedulerConfigs": _scheduler_configs,
    "ListComputeQuotas": _compute_quotas,
    "ListModelPackageGroups": _model_package_groups,
    "ListModelPackages": _model_packages,
    "ListHyperParameterTuningJobs": _tuning_jobs,
    "ListTrainingJobsForHyperParameterTuningJob": _tuning_job_training_jobs,
    "ListPipelines": _pipelines,
    "ListPipelineExecutions": _pipeline_executions,
    "ListPipelineExecutionSteps": _pipeline_execution_steps,
}


def test_every_served_list_with_a_sort_order_is_checked_here():
    assert SORTED_LISTS and set(SORTED_LISTS) == set(MAKERS)


@pytest.mark.parametrize("operation", sorted(set(SORTED_LISTS) - set(UNDOCUMENTED_ORDER)))
def test_the_documentation_names_a_default_order(operation):
    sort_by, sort_order = documented_order(operation)
    members = shapes.operation_model("sagemaker", operation).input_shape.members
    assert sort_by in members["SortBy"].enum and sort_order in members["SortOrder"].enum


@pytest.mark.parametrize("operation", SORTED_LISTS)
def test_a_request_without_an_order_gets_the_documented_one(db, operation):
    required, list_member, name_member = MAKERS[operation]()
    listed = [summary[name_member] for summary in call(operation, **required)[list_member]]
    sort_by, sort_order = default_order(operation)
    assert sort_by.replace("_", "").lower() in ("creationtime", "name")
    ascending = [NEWER, OLDER] if sort_by == "Name" else [OLDER, NEWER]  # "newer" < "older"
    assert listed == (ascending if sort_order == "Ascending" else ascending[::-1])
    reversed_order = "Descending" if sort_order == "Ascending" else "Ascending"
    answer = call(operation, **required, SortOrder=reversed_order)
    assert [summary[name_member] for summary in answer[list_member]] == listed[::-1]


def test_the_documented_defaults_as_read_from_the_model():
    """Pinned from the botocore model's documentation of each member."""
    assert documented_order("ListClusters") == ("CREATION_TIME", "Ascending")
    assert documented_order("ListClusterNodes") == ("CREATION_TIME", "Ascending")
    assert documented_order("ListTrainingJobs") == ("CreationTime", "Ascending")
    # ... but SageMaker answers ListTrainingJobs newest first (shared/protocol.md, observed).
    assert default_order("ListTrainingJobs") == ("CreationTime", "Descending")
    assert documented_order("ListModels") == ("CreationTime", "Descending")
    assert documented_order("ListComputeQuotas") == ("CreationTime", "Descending")
    assert documented_order("ListHyperParameterTuningJobs") == ("Name", "Ascending")
    assert documented_order("ListTrainingJobsForHyperParameterTuningJob") == ("Name", "Ascending")
