"""Tuning jobs over real rows, for the reconciler's tests: create one through the service, take
one reconciler step, end its training jobs with an objective as their metrics would record it."""
from django.utils import timezone

from logs import metrics as metric_store
from protocol.context import RequestContext
from training import metrics as training_metrics
from training.models import TrainingJob
from tuning import reconciler, services
from tuning.models import HyperParameterTuningJob

CTX = RequestContext(account_id="111111111111", region="us-east-1", access_key_id="AKIATEST")


def tuning_params(name: str, maximum: int = 3, parallel: int = 2, **config) -> dict:
    """A Random search over `lr` maximizing `acc`; `config` replaces members of its
    HyperParameterTuningJobConfig."""
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 3,
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "acc"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": maximum, "MaxParallelTrainingJobs": parallel},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "lr", "MinValue": "0", "MaxValue": "1"}],
            },
            **config,
        },
        "TrainingJobDefinition": definition("acc", epochs="4"),
        "Tags": [{"Key": "team", "Value": "a"}],
    }


def definition(metric: str, epochs: str) -> dict:
    """A TrainingJobDefinition of `algo:1` printing `metric`, with the static `epochs`."""
    return {
        "StaticHyperParameters": {"epochs": epochs},
        "AlgorithmSpecification": {
            "TrainingImage": "algo:1", "TrainingInputMode": "File",
            "MetricDefinitions": [{"Name": metric, "Regex": f"{metric}=([0-9.]+)"}],
        },
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 60},
    }


def create(name: str, maximum: int = 3, parallel: int = 2, ctx: RequestContext = CTX, **config):
    return services.create_tuning_job(ctx, tuning_params(name, maximum, parallel, **config))


def step(job: HyperParameterTuningJob) -> HyperParameterTuningJob:
    HyperParameterTuningJob.objects.filter(pk=job.pk).update(next_check_at=None)
    reconciler.reconcile(job.pk)
    job.refresh_from_db()
    return job


def trainings(job: HyperParameterTuningJob) -> list[TrainingJob]:
    return list(TrainingJob.objects.filter(training_job_name__startswith=f"{job.name}-").order_by("pk"))


def report(training: TrainingJob, *points: tuple[int, float]) -> None:
    """The training job printed these (timestamp ms, acc) values."""
    key = training_metrics.series_key(training)
    metric_store.put(key, "algo-1", [("acc", ms, acc) for ms, acc in points])


def end(training: TrainingJob, acc: float | None, status: str = "Completed", reason: str = "") -> None:
    if acc is not None:
        report(training, (1000, acc))
    TrainingJob.objects.filter(pk=training.pk).update(
        training_job_status=status, training_end_time=timezone.now(), failure_reason=reason
    )


def several_params(name: str, maximum: int = 5, parallel: int = 2, **config) -> dict:
    """A Random search over two training job definitions: `fast` tuning `lr` maximizing `acc`,
    `deep` tuning `depth` maximizing `score`."""
    fast = {**definition("acc", epochs="4"), "DefinitionName": "fast",
            "TuningObjective": {"Type": "Maximize", "MetricName": "acc"},
            "HyperParameterRanges": {"ContinuousParameterRanges": [{"Name": "lr", "MinValue": "0",
                                                                   "MaxValue": "1"}]}}
    deep = {**definition("score", epochs="2"), "DefinitionName": "deep",
            "TuningObjective": {"Type": "Maximize", "MetricName": "score"},
            "HyperParameterRanges": {"IntegerParameterRanges": [{"Name": "depth", "MinValue": "1",
                                                                "MaxValue": "9"}]}}
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "ResourceLimits": {"MaxNumberOfTrainingJobs": maximum, "MaxParallelTrainingJobs": parallel},
            **config,
        },
        "TrainingJobDefinitions": [fast, deep],
    }
