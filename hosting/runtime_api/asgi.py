"""The data plane's ASGI application, as uvicorn loads it (serve.py; each worker process imports
it): Django set up first, for the ORM and the settings, then the process's DataPlane."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
django.setup()

from hosting.runtime_api.dataplane import serving_app  # noqa: E402

app = serving_app()
