"""A SageMaker ARN a page shows (a pipeline step's job, model or package), linked to that
resource's console page when the viewer may see it: related resources linked both ways, as the
job's page links back to the execution that made it. The ARN's resource type (`training-job/…`)
says which table holds it; a resource another account owns, or one since deleted, stays text."""

from django.db.models import Model

from batchtransform.models import TransformJob
from console.addresses import KINDS, address
from console.viewer import Viewer
from hosting.models import SageMakerModel
from modelregistry.models import ModelPackage
from pipelines.models import PipelineExecution
from processing.models import ProcessingJob
from training.models import TrainingJob
from tuning.models import HyperParameterTuningJob

# An ARN's resource type → (the model holding it, its ARN field, the console page).
LINKED: dict[str, tuple[type[Model], str, str]] = {
    "training-job": (TrainingJob, "training_job_arn", "console:training-job"),
    "processing-job": (ProcessingJob, "processing_job_arn", "console:processing-job"),
    "transform-job": (TransformJob, "transform_job_arn", "console:transform-job"),
    "hyper-parameter-tuning-job": (HyperParameterTuningJob, "arn", "console:tuning-job"),
    "model": (SageMakerModel, "model_arn", "console:model"),
    "model-package": (ModelPackage, "model_package_arn", "console:model-package"),
    "pipeline": (PipelineExecution, "arn", "console:pipeline-execution"),
}


def page_of(viewer: Viewer, arn: str) -> str | None:
    """The console address of the resource `arn` names, or None (not a linked kind, not visible)."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "sagemaker":
        return None
    linked = LINKED.get(parts[5].split("/", 1)[0])
    if linked is None:
        return None
    model, field, page = linked
    row = KINDS[model].visible(viewer).filter(**{f"{field}__iexact": arn}).first()
    return None if row is None else address(viewer, row, page)
