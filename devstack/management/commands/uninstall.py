"""`manage.py uninstall` (`make clean`): remove this installation's containers, networks and
data directory from this host (devstack/uninstall.py). Stop the stack first (`make down`)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from devstack.uninstall import uninstall
from runtime.docker import get_runtime


class Command(BaseCommand):
    help = "Remove this installation's containers and networks (by label) and its data directory."

    def add_arguments(self, parser):
        parser.add_argument("--keep-data", action="store_true", help="Leave the data directory in place.")

    def handle(self, *args, keep_data: bool, **options):
        data_dir = Path(settings.DATA_DIR)
        removed = uninstall(
            get_runtime(), settings.SAGEPORT_STACK_ID, data_dir, keep_data, settings.SAGEPORT_TIER_MEMORY_DIR
        )
        counts = f"{len(removed.containers)} containers and {len(removed.networks)} networks"
        self.stdout.write(f"removed {counts} labelled sageport.stack={settings.SAGEPORT_STACK_ID}")
        if removed.data_dir:
            self.stdout.write(f"removed the data directory {removed.data_dir}")
        else:
            self.stdout.write(f"the data directory {data_dir}: {removed.kept_data_dir}")
