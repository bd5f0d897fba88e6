"""`manage.py runnode`: one more worker node for a running installation, in the foreground.

It runs only a Celery worker, supervised (restarted if it dies), for this host's node: the
worker registers the node's inventory, heartbeats, and runs the training instances and serving
containers the scheduler places here, on this host's Docker engine. Everything else (API, beat,
broker, database, S3) belongs to the installation; the node reaches it through the settings
(docs/operations.md, "Adding a node")."""

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devstack.management.commands._console import supervisor_for
from devstack.stack import ServiceFailed, StopRequested, reset_metrics_dir, stop_on_signals, worker_spec
from devstack.uninstall import mark

READY_BANNER = "Sageport node is running."
# Without these the node would run against a database, broker and S3 of its own on 127.0.0.1 (or
# sign S3 requests with a platform secret of its own, which the installation's S3 refuses).
SHARED_SETTINGS = (
    "DATABASE_URL", "SAGEPORT_REDIS_URL", "SAGEPORT_S3_ENDPOINT_URL", "SAGEPORT_S3_SECRET_ACCESS_KEY",
    "SAGEPORT_API_URL",
)


class Command(BaseCommand):
    help = "Run a worker node (a supervised Celery worker) of an installation whose services run elsewhere."

    def handle(self, *args, **options):
        # The variables as given: the settings would fill in this host's defaults.
        missing = [name for name in SHARED_SETTINGS if not os.environ.get(name)]
        if missing:
            raise CommandError(
                f"runnode needs the installation's {', '.join(missing)} (see docs/operations.md, "
                "\"Adding a node\")"
            )
        if _is_loopback(settings.SAGEPORT_NODE_ADDRESS) and not _is_loopback(
            urlsplit(settings.SAGEPORT_API_URL).hostname or ""
        ):
            self.stderr.write(
                f"warning: SAGEPORT_NODE_ADDRESS is {settings.SAGEPORT_NODE_ADDRESS}: an API on another "
                "host cannot reach this node's serving containers there"
            )
        data_dir = Path(settings.DATA_DIR)
        mark(data_dir)
        reset_metrics_dir(data_dir)  # the worker's own counters: nothing scrapes them on a node
        name = settings.SAGEPORT_NODE_NAME
        runtime_url = data_plane_url(os.environ)
        if runtime_url is None:
            raise CommandError(
                f"runnode cannot tell where the data plane is from SAGEPORT_API_URL "
                f"{settings.SAGEPORT_API_URL} (https: a proxy's); set SAGEPORT_RUNTIME_URL "
                "(see docs/operations.md, \"Adding a node\")"
            )
        spec = worker_spec(data_dir, name=f"worker-{name}", env={"SAGEPORT_RUNTIME_URL": runtime_url})
        with stop_on_signals() as stop_event:
            supervisor = supervisor_for(self.stdout, data_dir, stop_event)
            try:
                supervisor.start(spec)
                self.stdout.write(self.style.SUCCESS(READY_BANNER))
                self.stdout.write(f"  node       {name} at {settings.SAGEPORT_NODE_ADDRESS}")
                self.stdout.write(f"  worker     log: {supervisor.log_path(spec.name)}")
                self.stdout.write(f"  data       {data_dir}")
                self.stdout.flush()
                supervisor.run()
            except StopRequested:
                self.stdout.write("Stopping...")
            except ServiceFailed as error:
                raise CommandError(str(error)) from None
            finally:
                supervisor.stop_all()
        self.stdout.write("Stopped.")


def data_plane_url(environment: Mapping[str, str]) -> str | None:
    """Where this node's containers' runtime calls go (its forwarder's upstream): SAGEPORT_RUNTIME_URL
    as given, else the data plane's port on SAGEPORT_API_URL's host, where the API host's stack
    serves it; None for an https API URL, a proxy's, behind which the port is not known."""
    if environment.get("SAGEPORT_RUNTIME_URL"):
        return environment["SAGEPORT_RUNTIME_URL"]
    api = urlsplit(environment["SAGEPORT_API_URL"])
    if api.scheme != "http" or not api.hostname:
        return None
    host = f"[{api.hostname}]" if ":" in api.hostname else api.hostname
    return f"http://{host}:{settings.SAGEPORT_RUNTIME_PORT}"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
