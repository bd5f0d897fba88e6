"""The node's side of a Celery worker process: register at start-up, consume the node's own
queue, and heartbeat from a background thread for as long as the worker runs.

Connected through Celery's worker signals, so only `celery worker` processes act on them (the
API imports this module through workers.tasks and does nothing)."""
import logging
import threading

from celery.signals import celeryd_after_setup
from django.conf import settings
from django.db import connection

from workers import nodes

log = logging.getLogger(__name__)


@celeryd_after_setup.connect
def start_node(sender, instance, **kwargs) -> None:
    """Runs in the worker's main process before it consumes anything."""
    instance.app.amqp.queues.select_add(nodes.queue_name(nodes.local_name()))
    try:
        nodes.register()
    finally:
        connection.close()  # the pool processes are forked next: they must not share it
    threading.Thread(target=_beat_forever, name="node-heartbeat", daemon=True).start()


def _beat_forever() -> None:
    stop = threading.Event()  # never set: the thread ends with the process
    while not stop.wait(settings.SAGEPORT_NODE_HEARTBEAT_SECONDS):
        try:
            nodes.heartbeat()
        except Exception:  # a database hiccup must not end the heartbeats for good
            log.exception("node %s: heartbeat failed", nodes.local_name())
        finally:
            connection.close()
