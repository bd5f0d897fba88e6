from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.accesskeys import create_access_key


class Command(BaseCommand):
    help = "Create an access key and print: access_key_id secret_access_key account_id"

    def add_arguments(self, parser):
        parser.add_argument("--account-id", default=settings.SAGEPORT_DEFAULT_ACCOUNT_ID)

    def handle(self, *args, account_id: str, **options):
        try:
            key = create_access_key(account_id)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        self.stdout.write(f"{key.access_key_id} {key.secret_access_key} {key.account_id}")
