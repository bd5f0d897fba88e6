"""The Celery application shared by the API (to enqueue) and the worker and beat (to run)."""
import os

from celery import Celery

from controlplane.startup import exit_on_settings_error

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

app = Celery("sageport")
with exit_on_settings_error():  # read now (not when a task first runs): a bad value stops here
    app.config_from_object("django.conf:settings", namespace="CELERY", force=True)
# Task names are explicit (`name=`, the modules' names before issue 8): queued messages and the
# beat schedule keep working whatever module a task lives in.
app.autodiscover_tasks(["training", "hosting", "elastic"])
app.autodiscover_tasks(["reconcile"], related_name="sweeper")
