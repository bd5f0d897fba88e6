"""Endpoint steps run on the hosting node's queue only: the API's host, recorded per endpoint."""
from unittest import mock

from hosting import tasks as hosting_tasks
from hosting.models import Endpoint
from tests.unit.hosting.test_gpus import make_deployment


def test_an_endpoint_records_the_hosting_node_of_the_process_that_creates_it(settings):
    settings.SAGEPORT_HOSTING_NODE = "api-host"
    endpoint = Endpoint(endpoint_name="e")
    assert endpoint.hosting_node == "api-host"


def test_a_step_that_reached_another_node_is_handed_to_the_hosting_node_unprocessed(db, settings):
    settings.SAGEPORT_NODE_NAME = "node-b"
    endpoint = make_deployment("ml.m5.large").endpoint  # hosted on node-a
    with (
        mock.patch.object(hosting_tasks.reconcile_endpoint, "apply_async") as sent,
        mock.patch.object(hosting_tasks.reconciler, "reconcile") as reconciled,
    ):
        hosting_tasks.reconcile_endpoint(endpoint.pk)
    reconciled.assert_not_called()
    sent.assert_called_once_with((endpoint.pk,), countdown=0.0, queue="sageport.node.node-a")


def test_the_hosting_node_runs_the_step_and_schedules_the_next_on_its_own_queue(db, settings):
    settings.SAGEPORT_NODE_NAME = "node-a"
    endpoint = make_deployment("ml.m5.large").endpoint
    with (
        mock.patch.object(hosting_tasks.reconcile_endpoint, "apply_async") as sent,
        mock.patch.object(hosting_tasks.reconciler, "reconcile", return_value=2.5) as reconciled,
    ):
        hosting_tasks.reconcile_endpoint(endpoint.pk)
    reconciled.assert_called_once_with(endpoint.pk)
    sent.assert_called_once_with((endpoint.pk,), countdown=2.5, queue="sageport.node.node-a")


def test_the_sweeper_on_any_node_sends_overdue_endpoints_to_their_hosting_node(db, settings):
    settings.SAGEPORT_NODE_NAME = "node-b"
    endpoint = make_deployment("ml.m5.large").endpoint
    with mock.patch.object(hosting_tasks.reconcile_endpoint, "apply_async") as sent:
        hosting_tasks.sweep_endpoints()
    sent.assert_called_once_with((endpoint.pk,), countdown=0.0, queue="sageport.node.node-a")
