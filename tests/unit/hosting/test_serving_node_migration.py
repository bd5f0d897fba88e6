"""Upgrading to serving containers placed on nodes: each container row moves to its endpoint's
former hosting node; a row whose node never registered is dropped (its container is replaced)."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("endpoints", "0003_endpoint_failed_attempts"), ("workers", "0004_node_address")]
AFTER = [("endpoints", "0004_serving_container_node")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_container_rows_move_to_their_endpoints_hosting_node():
    old = migrate(BEFORE)
    now = timezone.now()
    old.get_model("workers", "Node").objects.create(
        name="api-host", cpus=2, memory_bytes=1, registered_at=now, heartbeat_at=now
    )
    Endpoint = old.get_model("endpoints", "Endpoint")
    Deployment = old.get_model("endpoints", "EndpointDeployment")
    Container = old.get_model("endpoints", "ServingContainer")
    for name, node in (("kept", "api-host"), ("orphaned", "never-registered")):
        endpoint = Endpoint.objects.create(
            account_id="123456789012", region="us-east-1", endpoint_name=name, endpoint_arn=f"arn:{name}",
            endpoint_config_name="c", creation_time=now, last_modified_time=now, hosting_node=node,
        )
        deployment = Deployment.objects.create(
            endpoint=endpoint, endpoint_config_name="c", snapshot={}, desired={}, created_at=now,
            phase_changed_at=now,
        )
        Container.objects.create(deployment=deployment, variant_name="v", ordinal=1, name=f"{name}-1")

    new = migrate(AFTER)

    placed = new.get_model("endpoints", "ServingContainer").objects.values_list("name", "node__name")
    assert list(placed) == [("kept-1", "api-host")]
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())  # back to the latest state
