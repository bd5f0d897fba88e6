"""Celery tasks of transform jobs: ids in, idempotent. A job runs from start to end holding its
lease (batchtransform/runner.py), in a thread of the worker process that took the message: the task
returns at once, so a job of hours never holds one of the worker's few processes away from the
other features' short steps. A placed job runs on its node's own queue (its containers and GPUs
are that node's); a message that reached another worker is handed on. A worker that dies takes
the thread with it; the job's lease then expires and the sweeper has it run again."""

import threading
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from batchtransform import placement, runner
from batchtransform.kind import TRANSFORM
from batchtransform.models import TERMINAL_STATUSES, TransformJob
from capacity import nodes
from jobs import cleanup
from reconcile import leases
from runtime.docker import get_runtime


@shared_task(name="batchtransform.tasks.run_transform_job", acks_late=True, ignore_result=True)
def run_transform_job(job_id: int) -> None:
    node = placement.node_of(job_id)
    if node is not None and node != nodes.local_name():
        enqueue(job_id, 0, node)
        return
    threading.Thread(target=_run, args=(job_id,), name=f"transform-job-{job_id}", daemon=True).start()


def _run(job_id: int) -> None:
    try:
        delay = runner.reconcile(job_id)  # a duplicate message finds the job claimed and leaves
        node = placement.node_of(job_id)
    finally:
        connection.close()  # this thread's own database connection
    if delay is not None:
        enqueue(job_id, delay, node)


def enqueue(job_id: int, countdown: float, node: str | None) -> None:
    """Run the job after `countdown` seconds on `node`'s queue (any worker's while unplaced)."""
    routing = {"queue": nodes.queue_name(node)} if node else {}
    run_transform_job.apply_async((job_id,), countdown=countdown, **routing)


def sweep_transform() -> None:
    """The sweeper's share (registered in BatchTransformConfig.ready): give back what ended jobs
    and jobs on lost nodes hold, run again every job whose next look is overdue and that nobody
    holds (a lost message, a worker killed mid-run, a lost node), then remove containers, networks
    and workspaces of jobs that ended without their clean-up."""
    placement.release_finished()
    placement.release_lost()
    found = cleanup.listed_leftovers(get_runtime(), TRANSFORM)  # before the live jobs are read
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    live = TransformJob.objects.exclude(transform_job_status__in=TERMINAL_STATUSES)
    overdue = live.filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack)).filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    )
    for job_id in leases.due_now(overdue):
        enqueue(job_id, 0, placement.node_of(job_id))
    rows = list(live.values_list("pk", "transform_job_arn"))
    cleanup.reap(get_runtime(), found, {arn for _, arn in rows}, {pk for pk, _ in rows})
