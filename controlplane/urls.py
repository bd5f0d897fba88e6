from django.contrib import admin
from django.urls import path, re_path

from accounts.views import CREDENTIALS_PATH, container_credentials_view
from controlplane.health import healthz, readyz
from controlplane.metrics import metrics
from hosting.runtime_api.invocations import invoke_endpoint_view
from protocol.views import json_protocol_view

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operations (README "Observability"): unauthenticated, GET.
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    # Containers' role credentials (accounts/views.py), reached through the services network.
    path(CREDENTIALS_PATH.lstrip("/"), container_credentials_view, name="container-credentials"),
    # The runtime API (`POST [<prefix>/]endpoints/<name>/invocations`), before the JSON 1.1
    # catch-all below, which answers every other path.
    re_path(
        r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/invocations$",
        invoke_endpoint_view,
        name="invoke-endpoint",
    ),
    # JSON 1.1 requests go to whatever path the client's endpoint_url has (boto3 keeps its path).
    re_path(r"", json_protocol_view, name="json-protocol"),
]
