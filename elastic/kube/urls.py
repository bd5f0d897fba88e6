"""The Kubernetes-style paths, mounted by controlplane/urls.py before the JSON 1.1 catch-all."""

import re

from django.urls import path, re_path

from elastic.kube import views
from elastic.kube.discovery import GROUP, PLURAL, VERSION

_BASE = f"apis/{GROUP}/{VERSION}"

# Discovery answers with or without a trailing slash (the kubernetes client asks `/version/`).
urlpatterns = [
    re_path(r"^version/?$", views.version, name="kube-version"),
    re_path(r"^api/?$", views.core_versions, name="kube-core-versions"),
    re_path(r"^apis/?$", views.groups, name="kube-groups"),
    re_path(rf"^apis/{re.escape(GROUP)}/?$", views.group, name="kube-group"),
    re_path(rf"^{re.escape(_BASE)}/?$", views.resources, name="kube-resources"),
    path(f"{_BASE}/{PLURAL}", views.all_jobs, name="kube-all-jobs"),
    path(f"{_BASE}/namespaces/<str:namespace>/{PLURAL}", views.namespace_jobs, name="kube-namespace-jobs"),
    path(f"{_BASE}/namespaces/<str:namespace>/{PLURAL}/<str:name>", views.job, name="kube-job"),
    # What `hyp` reads before it submits or lists: the CRD, and the namespace.
    path("apis/apiextensions.k8s.io/v1/customresourcedefinitions/<str:name>",
         views.custom_resource_definition, name="kube-crd"),
    path("api/v1/namespaces/<str:name>", views.namespace, name="kube-namespace"),
    # What `hyp get-logs` reads (elastic/kube/pod_logs.py).
    path("api/v1/namespaces/<str:namespace>/pods/<str:pod>/log", views.pod_log, name="kube-pod-log"),
    # Anything else under the Kubernetes prefixes: a NotFound Status, not the AWS catch-all.
    re_path(r"^(?:api|apis)/", views.unknown_path, name="kube-unknown"),
]
