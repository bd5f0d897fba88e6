from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devstack import status


class Command(BaseCommand):
    help = "Whether each service of the stack answers (API, data plane, S3, Redis, workers); nodes; what runs"

    def handle(self, *args, **options):
        self.stdout.write(f"Sageport, data in {settings.DATA_DIR}")
        services = status.services()
        for service in services:
            state = "answers" if service.answers else "NOT ANSWERING"
            self.stdout.write(f"  {service.name:<11} {state:<14} {service.where}")
        nodes = status.nodes()
        self.stdout.write(f"  {'nodes':<11} {nodes['ready']} ready, {nodes['lost']} lost")
        for what, count in status.work().items():
            self.stdout.write(f"  {count:>5} {what}")
        if not all(service.answers for service in services):
            raise CommandError("some services do not answer (`make up` starts the stack; see <data>/logs)")
