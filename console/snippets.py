"""A training job as the request that would create it again: for "Copy as" and "Clone"."""

import json
import pprint

from training.models import TrainingJob


def create_request(job: TrainingJob, name: str | None = None) -> dict:
    """The CreateTrainingJob request of `job` (defaults filled as stored), under `name`."""
    request = {"TrainingJobName": name or job.training_job_name, **job.request}
    if job.tags:
        request["Tags"] = job.tags
    return request


def as_json(request: dict) -> str:
    return json.dumps(request, indent=2, default=str)


def cli_command(request: dict) -> str:
    return (
        f"cat > {request['TrainingJobName']}.json <<'JSON'\n{as_json(request)}\nJSON\n"
        f"aws sagemaker create-training-job --cli-input-json file://{request['TrainingJobName']}.json"
    )


def boto3_code(request: dict) -> str:
    arguments = pprint.pformat(request, indent=1, width=100, sort_dicts=False)
    return (
        f'import boto3\n\nsagemaker = boto3.client("sagemaker")\nsagemaker.create_training_job(**{arguments})'
    )
