"""Endpoint steps go round the live nodes that hold the endpoint's containers, one node's queue
after the other; a step that reached the wrong node is handed on unprocessed."""
from unittest import mock

from hosting import tasks as hosting_tasks
from tests.unit.hosting.test_placement import add, make_deployment
from tests.unit.training.test_scheduler import make_node


def two_node_endpoint():
    make_node("node-a", gpus=0)
    make_node("node-b", gpus=0)
    deployment = make_deployment("ml.m5.large")
    assert add(deployment, count=2)  # one container on each node
    return deployment.endpoint


def run_step(endpoint_id: int, node: str | None, delay: float | None = 2.5):
    with (
        mock.patch.object(hosting_tasks.reconcile_endpoint, "apply_async") as sent,
        mock.patch.object(hosting_tasks.reconciler, "reconcile", return_value=delay) as reconciled,
    ):
        hosting_tasks.reconcile_endpoint(endpoint_id, node)
    return sent, reconciled


def test_a_step_that_reached_another_node_is_handed_to_its_node_unprocessed(db, settings):
    settings.SAGEPORT_NODE_NAME = "node-a"
    endpoint = two_node_endpoint()
    sent, reconciled = run_step(endpoint.pk, "node-b")
    reconciled.assert_not_called()
    sent.assert_called_once_with((endpoint.pk, "node-b"), countdown=0.0, queue="sageport.node.node-b")


def test_each_step_sends_the_next_to_the_next_node_in_turn(db, settings):
    endpoint = two_node_endpoint()
    settings.SAGEPORT_NODE_NAME = "node-a"
    sent, reconciled = run_step(endpoint.pk, "node-a")
    reconciled.assert_called_once_with(endpoint.pk)
    sent.assert_called_once_with((endpoint.pk, "node-b"), countdown=2.5, queue="sageport.node.node-b")

    settings.SAGEPORT_NODE_NAME = "node-b"
    sent, _ = run_step(endpoint.pk, "node-b")
    sent.assert_called_once_with((endpoint.pk, "node-a"), countdown=2.5, queue="sageport.node.node-a")


def test_a_step_meant_for_a_lost_node_is_taken_by_the_node_it_reached(db, settings):
    endpoint = two_node_endpoint()
    make_node("node-c", gpus=0, lost=True)
    settings.SAGEPORT_NODE_NAME = "node-b"
    sent, reconciled = run_step(endpoint.pk, "node-c")
    reconciled.assert_called_once_with(endpoint.pk)
    sent.assert_called_once_with((endpoint.pk, "node-a"), countdown=2.5, queue="sageport.node.node-a")


def test_an_endpoint_without_containers_is_stepped_by_any_worker(db, settings):
    make_node("node-a", gpus=0)
    endpoint = make_deployment("ml.m5.large").endpoint
    sent, reconciled = run_step(endpoint.pk, None)
    reconciled.assert_called_once_with(endpoint.pk)
    sent.assert_called_once_with((endpoint.pk, None), countdown=2.5)


def test_the_sweeper_sends_overdue_endpoints_to_the_first_node_of_their_rotation(db, settings):
    settings.SAGEPORT_NODE_NAME = "node-b"
    endpoint = two_node_endpoint()
    with mock.patch.object(hosting_tasks.reconcile_endpoint, "apply_async") as sent:
        hosting_tasks.sweep_endpoints()
    sent.assert_called_once_with((endpoint.pk, "node-a"), countdown=0.0, queue="sageport.node.node-a")
