"""The operator's Celery side: one reconcile chain per HyperPodPyTorchJob (elastic/operator.py)."""
from celery import shared_task
from django.db import transaction


@shared_task(name="elastic.tasks.reconcile_hyperpod_job", ignore_result=True)
def reconcile_hyperpod_job(pk: int) -> None:
    from elastic import operator

    operator.reconcile(pk)


def nudge(pk: int) -> None:
    """Have the operator look at the job once the caller's transaction commits (a submission, a
    deletion): the sweeper would find it too, a sweep later."""
    transaction.on_commit(lambda: reconcile_hyperpod_job.delay(pk))
