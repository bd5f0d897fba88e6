from django.contrib import admin
from django.urls import include, path, re_path

from accounts.views import CREDENTIALS_PATH, container_credentials_view
from controlplane.health import healthz, readyz
from controlplane.metrics import metrics
from controlplane.root import root
from hosting.runtime_api.api_port import runtime_view
from hosting.runtime_api.contract import runtime_paths
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
    # The runtime API (`POST [<prefix>/]endpoints/<name>/invocations`, ...: every sagemaker-runtime
    # operation's path), answered by the data plane's application (hosting/runtime_api/api_port.py),
    # before the JSON 1.1 catch-all below, which answers every other path but the console's and
    # static files'.
    *(re_path(pattern, runtime_view, name=operation) for pattern, operation in runtime_paths()),
    # The Kubernetes-style API of HyperPodPyTorchJobs (`/version`, `/api`, `/apis/...`;
    # docs/hyperpod.md "Elastic training"), before the catch-all; protocol/middleware.py leaves
    # its answers alone.
    path("", include("elastic.kube.urls")),
    # JSON 1.1 requests go to whatever path the client's endpoint_url has (boto3 keeps its path).
    re_path(r"^(?!static/|console/)", json_protocol_view, name="json-protocol"),
]
