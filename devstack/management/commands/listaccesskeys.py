from django.core.management.base import BaseCommand

from accounts.models import AccessKey
from devstack.tables import aligned


class Command(BaseCommand):
    help = "List the access keys people sign with (never their secrets): id, account, status, created"

    def add_arguments(self, parser):
        parser.add_argument("--account-id", help="only this account's keys")

    def handle(self, *args, account_id: str | None, **options):
        # Containers' and STS's short-lived keys are the platform's, not people's: not listed.
        keys = AccessKey.objects.filter(issued_for="", expires_at__isnull=True)
        if account_id:
            keys = keys.filter(account_id=account_id)
        rows = [("ACCESS KEY ID", "ACCOUNT", "STATUS", "CREATED (UTC)", "NOTE")]
        for key in keys.order_by("account_id", "created_at"):
            rows.append((
                key.access_key_id,
                key.account_id,
                "Active" if key.active else "Inactive",
                key.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                "default (<data>/env)" if key.is_default else "",
            ))
        for line in aligned(rows):
            self.stdout.write(line)
