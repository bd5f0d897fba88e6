"""The run of a transform job on a worker: one reconcile step (reconcile/loop.py) that runs the job
from start to end while holding its lease (kept alive), then removes its containers, network and
workspace and writes its terminal status.

A worker that dies mid-run leaves the job InProgress with an expiring lease: the sweeper hands it
to a worker again, which runs it again from the start (every `.out` is written whole or not at all,
so a second run overwrites, never mixes). A transient failure (S3 or the engine away) is retried the
same way, with backoff; a permanent one (no input objects, another account's bucket) fails the job
with its reason. StopTransformJob moves the job to Stopping: the running step sees it within
WATCH_SECONDS, stops sending, and the job ends Stopped.

Before it runs, a job is placed (batchtransform/placement.py): a node with its instances' GPUs
free, whose worker then runs it; a job that must wait for capacity is looked at again at every
poll, one that no node can hold fails. Its end gives back what it held."""

import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import connection
from django.utils import timezone

from batchtransform import data_log, instances, parameters, placement
from batchtransform.kind import identity
from batchtransform.model_client import READ_BYTES, ModelClient, ModelError
from batchtransform.models import TransformJob, TransformJobStatus
from batchtransform.objects import Plan, Sender, Stopped, transform
from capacity import nodes, single_node
from jobs import cleanup, instance_metrics, outputs, staging
from reconcile import endings, leases
from reconcile.loop import reconcile_once
from runtime.docker import get_runtime
from transform.batching import DEFAULT_MAX_PAYLOAD_IN_MB
from transform.errors import ObjectFailed

MIB = 1024 * 1024
WATCH_SECONDS = 0.5  # how often a running job looks for a stop request, copies its logs, reads its metrics
_RUNNING = (TransformJobStatus.IN_PROGRESS, TransformJobStatus.STOPPING)


def reconcile(job_id: int) -> float | None:
    return reconcile_once(TransformJob, job_id, _step, _give_up, finished=lambda job: job.is_terminal)


def _step(job: TransformJob, token: str) -> float | None:
    if job.transform_job_status == TransformJobStatus.STOPPING:
        return _end(job, TransformJobStatus.STOPPED)  # stopped while no worker ran it
    decision = placement.place(job)
    if isinstance(decision, single_node.NeverFits):
        return _end(job, TransformJobStatus.FAILED, decision.reason)
    if isinstance(decision, single_node.Waiting):
        return settings.SAGEPORT_POLL_INTERVAL_SECONDS  # capacity is looked for again
    if decision.node != nodes.local_name():
        return 0.0  # batchtransform.tasks hands the job to that node's own queue
    with leases.kept_alive(TransformJob, job.pk, token):
        outcome, reason = _run(job)
    return _end(job, outcome, reason)


def _give_up(job: TransformJob, reason: str) -> float | None:
    return _end(job, TransformJobStatus.FAILED, reason)


def _end(job: TransformJob, outcome: str, reason: str = "") -> None:
    """Remove the job's containers, then write its end (a stop asked for meanwhile makes a job that
    did not fail Stopped); its network and workspace go after, the end not waiting for them."""
    cleanup.remove_containers(get_runtime(), identity(job))
    placement.release(job)
    now = timezone.now()
    if outcome == TransformJobStatus.COMPLETED and _status(job) == TransformJobStatus.STOPPING:
        outcome = TransformJobStatus.STOPPED
    if TransformJob.objects.filter(pk=job.pk, transform_job_status__in=_RUNNING).update(
        transform_job_status=outcome,
        failure_reason=reason[:1024],
        transform_end_time=now,
        last_modified_time=now,
    ):
        endings.ended(job.transform_job_name)
    cleanup.remove_surroundings(get_runtime(), identity(job))
    return None


def _status(job: TransformJob) -> str:
    return TransformJob.objects.filter(pk=job.pk).values_list("transform_job_status", flat=True).first()


def _run(job: TransformJob) -> tuple[str, str]:
    """(outcome, FailureReason) of one run of the job on this worker."""
    now = timezone.now()
    TransformJob.objects.filter(pk=job.pk, transform_start_time__isnull=True).update(
        transform_start_time=now, last_modified_time=now
    )
    halt = threading.Event()
    watcher = _Watcher(job, halt)
    watcher.start()
    try:
        started = instances.start(job, halt)
        reason = "" if halt.is_set() else _transform_all(job, started, halt)
    except instances.InstanceFailed as error:
        reason = str(error)
    finally:
        halt.set()
        watcher.join()
        instances.stop(job)
        instances.collect_logs(job, instances.LOG_LOOKS_AT_END)
    if reason:
        return TransformJobStatus.FAILED, reason
    if _status(job) == TransformJobStatus.STOPPING:
        return TransformJobStatus.STOPPED, ""
    return TransformJobStatus.COMPLETED, ""


def _transform_all(job: TransformJob, started: list[instances.Instance], halt: threading.Event) -> str:
    """Every instance's share of the input objects; the FailureReason of the first object that
    failed, "" when none did."""
    effective = parameters.effective(job.request, _client(job, started[0]).execution_parameters())
    # An answer up to a payload's size is held in memory, a larger one waits on disk: the worker's
    # memory holds about MaxConcurrentTransforms x MaxPayloadInMB (at most 100 MB, SageMaker's rule).
    memory_bytes = (effective.max_payload_in_mb or DEFAULT_MAX_PAYLOAD_IN_MB) * MIB
    clients = {instance.host: _client(job, instance, memory_bytes) for instance in started}
    plan = _plan(job, effective)
    source = _input(job)
    for instance in started:
        data_log.write(identity(job), instance.host, [effective.data_log_line()])
    shares = {
        instance.host: staging.host_paths(job.account_id, source, index, len(started))
        for index, instance in enumerate(started)
    }
    with ThreadPoolExecutor(len(started), thread_name_prefix="transform-instance") as pool:
        runs = [
            pool.submit(_run_instance, job, plan, clients[host], halt, host, share)
            for host, share in shares.items()
        ]
        reasons = [run.result() for run in runs]
    return next((reason for reason in reasons if reason), "")


def _run_instance(
    job: TransformJob,
    plan: Plan,
    client: ModelClient,
    halt: threading.Event,
    host: str,
    share: list[tuple[str, str, str]],
) -> str:
    """Send this instance's objects, up to MaxConcurrentTransforms requests in flight across them."""
    if not share:
        return ""
    concurrency = plan.concurrency
    requests_pool = ThreadPoolExecutor(concurrency, thread_name_prefix=f"transform-{host}")
    objects_pool = ThreadPoolExecutor(min(concurrency, len(share)), thread_name_prefix=f"objects-{host}")
    try:
        sender = Sender(client, requests_pool, threading.Semaphore(concurrency), halt)
        futures = {objects_pool.submit(transform, plan, sender, *item): item for item in share}
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [
            future for future in done if future.exception() and not isinstance(future.exception(), Stopped)
        ]
        if failed:
            halt.set()
            bucket, key, _ = futures[failed[0]]
            return _failure(job, host, f"{bucket}/{key}", failed[0].exception())
        wait(futures)
    finally:
        # A halted job leaves its requests in flight: they end when its containers are removed.
        objects_pool.shutdown(wait=not halt.is_set(), cancel_futures=True)
        requests_pool.shutdown(wait=not halt.is_set(), cancel_futures=True)
        connection.close()
    return ""


def _failure(job: TransformJob, host: str, obj: str, error: BaseException) -> str:
    """The data log's lines and the job's FailureReason for an object that failed."""
    if isinstance(error, ModelError):
        data_log.write(identity(job), host, data_log.rejection_lines(obj, error.status, error.message))
        answered = f"the model answered {error.status}" if error.status is not None else error.message
        return f"ClientError: {obj}: {answered}. See job logs for more information"
    if isinstance(error, ObjectFailed):
        data_log.write(identity(job), host, [f"{obj}: {error.reason}"])
        return f"ClientError: {obj}: {error.reason}"
    raise error  # S3 or a bug: reconcile/loop.py sorts it (retry, or fail the job)


def _client(job: TransformJob, instance: instances.Instance, memory_bytes: int = READ_BYTES) -> ModelClient:
    invocations = parameters.invocations(job.request)
    return ModelClient(
        instance.port,
        job.request["TransformInput"].get("ContentType"),
        job.request["TransformOutput"].get("Accept"),
        timeout=invocations.timeout_seconds,
        retries=invocations.max_retries,
        memory_bytes=memory_bytes,
    )


def _plan(job: TransformJob, effective: parameters.Effective) -> Plan:
    transform_input = job.request["TransformInput"]
    transform_output = job.request["TransformOutput"]
    where = outputs.location(job.account_id, transform_output["S3OutputPath"])
    return Plan(
        split_type=transform_input.get("SplitType"),
        compression_type=transform_input.get("CompressionType"),
        batch_strategy=effective.batch_strategy,
        max_payload_in_mb=effective.max_payload_in_mb,
        concurrency=effective.max_concurrent_transforms,
        assemble_with=transform_output.get("AssembleWith"),
        data_processing=job.request.get("DataProcessing"),
        content_type=transform_input.get("ContentType"),
        accept=transform_output.get("Accept"),
        output_bucket=where.bucket,
        output_prefix=where.key.rstrip("/") + "/" if where.key.strip("/") else "",
    )


def _input(job: TransformJob) -> staging.S3Input:
    source = job.request["TransformInput"]["DataSource"]["S3DataSource"]
    return staging.S3Input(
        noun="transform input",
        name="input",
        uri=source["S3Uri"],
        data_type=source["S3DataType"],
        distribution="ShardedByS3Key",  # the instances share the objects: each reads its part
        container_dir="the output path",
    )


class _Watcher(threading.Thread):
    """While the job runs: sees StopTransformJob (the row turned Stopping) and copies the
    containers' output into their log streams."""

    def __init__(self, job: TransformJob, halt: threading.Event):
        super().__init__(name=f"transform-watch-{job.pk}", daemon=True)
        self._job = job
        self._halt = halt

    def run(self) -> None:
        try:
            halted = False
            while not halted:
                halted = self._halt.wait(WATCH_SECONDS)
                if not halted and _status(self._job) == TransformJobStatus.STOPPING:
                    self._halt.set()
                self._look()
        finally:
            connection.close()  # this thread's own database connection

    def _look(self) -> None:
        """Copy the containers' new output; publish their instance metrics of this minute (in
        /aws/sagemaker/TransformJobs, Host `<job>/algo-N`, no DiskUtilization: SageMaker has none
        for transform). Once more when the run ends, before its containers are stopped, so that a
        job shorter than a look still has its minute."""
        instances.collect_logs(self._job)
        instance_metrics.publish(get_runtime(), identity(self._job), instances.states(self._job))
