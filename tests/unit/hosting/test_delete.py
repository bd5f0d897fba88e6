"""DeleteEndpoint as the endpoint reconciler carries it out, without an engine."""
import logging
from unittest import mock

from hosting import reconciler as hosting
from hosting.models import DeploymentPhase, Endpoint, EndpointStatus
from tests.unit.hosting.test_placement import make_deployment


class _EmptyEngine:
    """An engine that holds none of the endpoint's containers (all already removed)."""

    def find(self, labels):
        return []


def test_a_deleted_endpoint_with_nothing_left_is_removed_in_one_step_without_an_error(db, caplog):
    deployment = make_deployment("ml.m5.large")  # no containers left
    endpoint = deployment.endpoint
    Endpoint.objects.filter(pk=endpoint.pk).update(endpoint_status=EndpointStatus.DELETING)
    deployment.__class__.objects.filter(pk=deployment.pk).update(phase=DeploymentPhase.RETIRING)
    with (
        caplog.at_level(logging.WARNING),
        mock.patch.object(hosting, "get_runtime", return_value=_EmptyEngine()),
        mock.patch.object(hosting.routing, "bump"),
    ):
        next_look = hosting.reconcile(endpoint.pk)
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert next_look is None
    assert not Endpoint.objects.filter(pk=endpoint.pk).exists()
