"""Celery's side of asynchronous inference: `drain` runs what the queue gives an endpoint now
(hosting/async_queue.py `claim`), one thread per claimed request, then looks again; the sweeper
(`sweep_async`, from hosting/tasks.sweep_hosting) sends `drain` for every endpoint with waiting
requests (a lost message, a worker that died with leases held), publishes the backlog metrics
and prunes old finished rows."""

from concurrent.futures import ThreadPoolExecutor

from celery import shared_task
from django.db import connections

from hosting import async_metrics, async_queue, async_worker
from hosting.models import AsyncInvocationStatus


@shared_task(name="hosting.async_tasks.drain", acks_late=True, ignore_result=True)
def drain(endpoint_id: int) -> None:
    """Claim and run until the endpoint has nothing it can start; a drain that finds every slot
    taken ends at once (the drain holding them looks again when its requests end), and so does
    one whose every request went back to the queue (no busy loop against a leaving container)."""
    while True:
        plan = async_queue.claim(endpoint_id)
        claimed = [pk for pk, _ in plan.runs] + plan.expired
        if not claimed:
            return
        with ThreadPoolExecutor(max_workers=len(claimed), thread_name_prefix="async-inference") as pool:
            outcomes = list(pool.map(_process, claimed))
        if all(outcome == AsyncInvocationStatus.PENDING for outcome in outcomes):
            return  # every one went back (a container leaving, the store away): the sweeper retries


def _process(pk: int) -> str:
    try:
        return async_worker.process(pk)
    finally:
        connections.close_all()  # this thread's own connections


def sweep_async() -> None:
    for endpoint_id in async_queue.endpoints_with_work():
        drain.delay(endpoint_id)
    async_metrics.publish()
    async_queue.prune()
