"""The Django project: settings, URLs, the Celery application, WSGI. It wires the apps together
and may import any package; no package imports it (only DJANGO_SETTINGS_MODULE and `celery -A`
name it)."""
from controlplane.celery import app as celery_app

__all__ = ["celery_app"]
