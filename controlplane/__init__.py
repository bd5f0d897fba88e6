"""Sageport control plane: Django project, protocol layer and accounts."""
from controlplane.celery import app as celery_app

__all__ = ["celery_app"]
