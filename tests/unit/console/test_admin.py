"""The stock admin edits no job, endpoint or internal state (the console shows them; the API and
the worker change them); what it keeps (access keys, users) is served with its CSS."""

from django.apps import apps
from django.contrib import admin
from django.test import Client


def test_no_job_endpoint_or_capacity_row_is_editable_in_the_admin():
    internal = {"jobs", "endpoints", "cloudwatch", "workers"}  # training, hosting, logs, capacity

    registered = {model._meta.app_label for model in admin.site._registry}

    assert registered & internal == set()
    assert apps.get_model("controlplane", "AccessKey") in admin.site._registry


def test_the_admin_is_served_with_its_stylesheet(db):
    response = Client().get("/static/admin/css/base.css")

    assert (response.status_code, response["Content-Type"].split(";")[0]) == (200, "text/css")
