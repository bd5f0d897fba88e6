from django.contrib import admin
from django.urls import include, path, re_path

from accounts.views import CREDENTIALS_PATH, container_credentials_view
from controlplane.health import healthz, readyz
from controlplane.metrics import metrics
from controlplane.root import root
from hosting.runtime_api.async_invocations import invoke_endpoint_async_view
from hosting.runtime_api.contract import unserved_paths
from hosting.runtime_api.invocations import invoke_endpoint_view, unserved_runtime_view
from protocol.views import json_protocol_view

urlpatterns = [
    path("admin/", admin.site.urls),
    # The web console (docs/console.md); `/` sends a browser there, AWS clients to the API.
    path("console/", include("console.urls")),
    path("", root, name="root"),
    # Operations (docs/observability.md): unauthenticated, GET.
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    # Containers' role credentials (accounts/views.py), reached through the services network.
    path(CREDENTIALS_PATH.lstrip("/"), container_credentials_view, name="container-credentials"),
    # The runtime API (`POST [<prefix>/]endpoints/<name>/invocations`), before the JSON 1.1
    # catch-all below, which answers every other path but the console's and static files'.
    re_path(
        r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/invocations$",
        invoke_endpoint_view,
        name="invoke-endpoint",
    ),
    re_path(
        r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/async-invocations$",
        invoke_endpoint_async_view,
        name="invoke-endpoint-async",
    ),
    # The runtime operations Sageport does not serve (InvokeEndpointWithResponseStream, ...): 501.
    *(re_path(pattern, unserved_runtime_view, name=operation) for pattern, operation in unserved_paths()),
    # The Kubernetes-style API of HyperPodPyTorchJobs (`/version`, `/api`, `/apis/...`;
    # docs/hyperpod.md "Elastic training"), before the catch-all; protocol/middleware.py leaves
    # its answers alone.
    path("", include("elastic.kube.urls")),
    # JSON 1.1 requests go to whatever path the client's endpoint_url has (boto3 keeps its path).
    re_path(r"^(?!static/|console/)", json_protocol_view, name="json-protocol"),
]
