"""Search's `TrainingJob` records (protocol/search.py): what DescribeTrainingJob answers with the
job's tags, in the `TrainingJob` shape, for the caller's account and region. What the SDK and
people search on: `TrainingJobName`, `TrainingJobStatus`, `Tags.<key>`, `HyperParameters.<name>`,
`FinalMetricDataList.MetricName`/`.Value`, `CreationTime`, sorted by a metric or a time."""

from protocol.context import RequestContext
from protocol.search import in_shape
from training.models import TrainingJob
from training.presenters import describe_training_job


def search_training_jobs(ctx: RequestContext) -> list[dict]:
    rows = TrainingJob.objects.filter(account_id=ctx.account_id, region=ctx.region)
    return [in_shape("TrainingJob", {**describe_training_job(job), "Tags": job.tags}) for job in rows]
