from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from capacity.models import Node
from devstack.tables import aligned


class Command(BaseCommand):
    help = "List the worker nodes: name, address, state (ready, or lost), CPUs, memory, GPUs, last heartbeat"

    def handle(self, *args, **options):
        now = timezone.now()
        rows = [("NAME", "ADDRESS", "STATE", "INSTANCE TYPE", "CPUS", "MEMORY", "GPUS", "HEARTBEAT")]
        for node in Node.objects.order_by("name"):
            rows.append((
                node.name,
                node.address,
                f"lost since {node.lost_at:%Y-%m-%d %H:%M:%S} UTC" if node.lost_at else "ready",
                node.instance_type or "-",
                str(node.cpus),
                f"{node.memory_bytes / (1 << 30):.1f} GiB",
                str(len(node.gpus)),
                f"{_age(now - node.heartbeat_at)} ago",
            ))
        if len(rows) == 1:
            self.stdout.write("No node has registered: no worker has started yet.")
        for line in aligned(rows) if len(rows) > 1 else []:
            self.stdout.write(line)


def _age(age: timedelta) -> str:
    seconds = max(0, int(age.total_seconds()))
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"
