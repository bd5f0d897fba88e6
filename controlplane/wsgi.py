"""WSGI entry point (controlplane/serve.py runs it under granian)."""
import os

from django.core.wsgi import get_wsgi_application

from controlplane.startup import exit_on_settings_error

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
with exit_on_settings_error():
    application = get_wsgi_application()
