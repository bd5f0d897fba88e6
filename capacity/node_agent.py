"""The node's side of a Celery worker process: register at start-up, consume the node's own
queue, heartbeat from a background thread for as long as the worker runs, and follow the node's
engine's container events (reconcile/container_events.py) from another.

Connected through Celery's worker signals, so only `celery worker` processes act on them (every
other process imports this module through the workers app and does nothing)."""
import logging
import threading

from celery.signals import celeryd_after_setup, worker_ready
from django.conf import settings
from django.db import connection

from capacity import nodes
from reconcile import container_events
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


@celeryd_after_setup.connect
def register_node(sender, instance, **kwargs) -> None:
    """In the worker's main process, before it consumes anything or forks its pool."""
    instance.app.amqp.queues.select_add(nodes.queue_name(nodes.local_name()))
    try:
        nodes.register()
    except Exception:  # e.g. nvidia-smi not answering: the heartbeat registers again later
        log.exception("node %s: registration failed", nodes.local_name())
    finally:
        connection.close()  # the pool processes are forked next: they must not share it


@worker_ready.connect
def start_heartbeats(sender, **kwargs) -> None:
    # Started once the pool is forked, so no child inherits a lock this thread might hold.
    threading.Thread(target=_beat_forever, name="node-heartbeat", daemon=True).start()


@worker_ready.connect
def watch_container_events(sender, **kwargs) -> None:
    # After the fork too: the stream's connection and thread belong to the main process alone.
    container_events.start(get_runtime(), nodes.local_name())


def _beat_forever() -> None:
    stop = threading.Event()  # never set: the thread ends with the process
    while not stop.wait(settings.SAGEPORT_NODE_HEARTBEAT_SECONDS):
        try:
            nodes.heartbeat()
        except Exception:  # a database hiccup must not end the heartbeats for good
            log.exception("node %s: heartbeat failed", nodes.local_name())
        finally:
            connection.close()
