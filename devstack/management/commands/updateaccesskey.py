from django.core.management.base import BaseCommand, CommandError

from accounts.models import AccessKey


class Command(BaseCommand):
    help = (
        "Make an access key Inactive (requests signed with it are refused, as IAM's UpdateAccessKey "
        "does) or Active again; prints: access_key_id status"
    )

    def add_arguments(self, parser):
        parser.add_argument("access_key_id")
        parser.add_argument("--status", choices=("Active", "Inactive"), required=True)

    def handle(self, *args, access_key_id: str, status: str, **options):
        people_s = AccessKey.objects.filter(issued_for="", expires_at__isnull=True)
        if not people_s.filter(access_key_id=access_key_id).update(active=status == "Active"):
            raise CommandError(f"no access key {access_key_id} (containers' and STS's keys are not listed)")
        self.stdout.write(f"{access_key_id} {status}")
