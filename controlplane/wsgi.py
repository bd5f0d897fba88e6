"""WSGI entry point (gunicorn serves it; gunicorn keeps the raw request path SigV4 needs)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
application = get_wsgi_application()
