"""Each node's Celery worker runs the forwarder (gateway/forwarder.py) for as long as it runs,
so that wherever training or serving containers run, their services network leads to Sageport:
a second node's worker forwards to the API and S3 URLs it is configured with.

Connected through Celery's worker signal, so only `celery worker` processes act on it (every
other process imports this module through the gateway app and does nothing). A worker that
dies takes its forwarder with it; containers' SDKs retry a refused connection while the worker
is restarted."""

from celery.signals import worker_ready
from django.conf import settings

from gateway.forwarder import Forwarder, Route
from gateway.network import GATEWAY_ADDRESS


def routes() -> list[Route]:
    return [
        Route("api", GATEWAY_ADDRESS, settings.SAGEPORT_SERVICES_API_PORT, settings.SAGEPORT_API_URL),
        Route("s3", GATEWAY_ADDRESS, settings.SAGEPORT_SERVICES_S3_PORT, settings.SAGEPORT_S3_ENDPOINT_URL),
    ]


@worker_ready.connect
def start_forwarder(sender, **kwargs) -> None:
    # Started once the pool is forked, so no pool process inherits its sockets.
    Forwarder(routes()).start()
