"""The sweeper runs every registered hook, in the order the apps registered them, and the
Celery tasks keep the names that queued messages and the beat schedule use (issue 8 moved their
modules)."""
from django.conf import settings

from accounts import container_credentials
from batchtransform import tasks as transform_tasks
from clusters import membership
from controlplane.celery import app
from elastic import tasks as elastic_tasks
from hosting import tasks as hosting_tasks
from logs import retention
from pipelines import tasks as pipeline_tasks
from processing import tasks as processing_tasks
from reconcile import sweeper
from training import tasks as training_tasks
from tuning import tasks as tuning_tasks


def test_the_features_register_their_share_in_the_order_of_the_apps():
    assert sweeper._hooks == [
        container_credentials.sweep,
        training_tasks.sweep_training,
        processing_tasks.sweep_processing,
        hosting_tasks.sweep_hosting,
        transform_tasks.sweep_transform,
        tuning_tasks.sweep_tuning,
        pipeline_tasks.sweep_pipeline_executions,
        membership.settle_all,
        elastic_tasks.sweep_hyperpod_jobs,
        retention.purge_expired_events,
    ]


def test_the_sweep_runs_every_hook_in_order(monkeypatch):
    calls = []
    monkeypatch.setattr(sweeper, "_hooks", [])
    sweeper.register(lambda: calls.append("first"))
    sweeper.register(lambda: calls.append("second"))
    sweeper.sweep()
    assert calls == ["first", "second"]


def test_tasks_keep_the_names_queued_messages_use():
    app.loader.import_default_modules()
    names = set(app.tasks)
    assert {
        "workers.tasks.reconcile_training_job",
        "workers.tasks.sweep",
        "workers.hosting_tasks.reconcile_endpoint",
    } <= names
    assert training_tasks.reconcile_training_job.name == "workers.tasks.reconcile_training_job"
    assert hosting_tasks.reconcile_endpoint.name == "workers.hosting_tasks.reconcile_endpoint"
    assert sweeper.sweep.name == "workers.tasks.sweep"


def test_the_beat_schedule_names_registered_tasks():
    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks
