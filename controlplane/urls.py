from django.contrib import admin
from django.urls import path, re_path

from controlplane.protocol.views import json_protocol_view

urlpatterns = [
    path("admin/", admin.site.urls),
    # RUNTIME API: the InvokeEndpoint pattern (`POST [<prefix>/]endpoints/<name>/invocations`)
    # goes here, before the JSON 1.1 catch-all below, which answers every other path.
    # JSON 1.1 requests go to whatever path the client's endpoint_url has (protocol.md §1).
    re_path(r"", json_protocol_view, name="json-protocol"),
]
