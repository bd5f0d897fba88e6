"""Each node's Celery worker runs the forwarder (gateway/forwarder.py) for as long as it runs,
so that wherever training or serving containers run, their services network leads to Sageport:
a second node's worker forwards to the API, data plane and S3 URLs it is configured with.

Connected through Celery's worker signal, so only `celery worker` processes act on it (every
other process imports this module through the gateway app and does nothing). A worker that
dies takes its forwarder with it; containers' SDKs retry a refused connection while the worker
is restarted."""

from celery.signals import worker_ready
from django.conf import settings

from gateway.forwarder import Forwarder, Route
from gateway.network import GATEWAY_ADDRESS


def routes() -> list[Route]:
    upstreams = (
        ("api", settings.SAGEPORT_SERVICES_API_PORT, settings.SAGEPORT_API_URL),
        ("runtime", settings.SAGEPORT_SERVICES_RUNTIME_PORT, settings.SAGEPORT_RUNTIME_URL),
        ("s3", settings.SAGEPORT_SERVICES_S3_PORT, settings.SAGEPORT_S3_ENDPOINT_URL),
    )
    return [Route(name, GATEWAY_ADDRESS, port, upstream) for name, port, upstream in upstreams]


@worker_ready.connect
def start_forwarder(sender, **kwargs) -> None:
    # Started once the pool is forked, so no pool process inherits its sockets.
    Forwarder(routes()).start()
