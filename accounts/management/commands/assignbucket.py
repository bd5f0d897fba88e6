import re

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts import buckets

_ACCOUNT_ID = re.compile(r"^\d{12}$")


class Command(BaseCommand):
    help = (
        "Give a bucket that was created outside the S3 gateway (directly in the store, or in an "
        "external S3) to an account, so that its requests may name it; prints: bucket account_id"
    )

    def add_arguments(self, parser):
        parser.add_argument("bucket")
        parser.add_argument("account_id")
        parser.add_argument(
            "--move", action="store_true", help="take the bucket from the account that owns it now"
        )

    def handle(self, *args, bucket: str, account_id: str, move: bool, **options):
        if not _ACCOUNT_ID.match(account_id):
            raise CommandError(f"account id {account_id!r} is not 12 digits")
        owner = buckets.owner_of(bucket)
        if owner not in (None, account_id) and not move:
            raise CommandError(f"bucket {bucket} belongs to account {owner}; give --move to take it from it")
        if owner != account_id:
            with transaction.atomic():
                buckets.release(bucket)
                buckets.claim(bucket, account_id)
        self.stdout.write(f"{bucket} {account_id}")
