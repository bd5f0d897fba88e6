"""`manage.py runstack`: the whole embedded stack in the foreground, stopped by Ctrl-C."""

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devstack.management.commands._console import supervisor_for
from devstack.stack import (
    ServiceFailed,
    StopRequested,
    Supervisor,
    api_spec,
    beat_spec,
    create_default_bucket,
    platform_s3_key,
    prepare_data_dir,
    redis_spec,
    reset_metrics_dir,
    runtime_spec,
    s3_specs,
    stop_on_signals,
    worker_spec,
)

READY_BANNER = "Sageport is running."  # scripts/up.sh waits for this line


class Command(BaseCommand):
    help = "Run Redis, SeaweedFS (S3), the API, the data plane, a Celery worker and Celery beat until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument(
            "--prepare-only",
            action="store_true",
            help="Migrate the database, create the default access key, write <data>/env and the SDK's "
            "config, then exit.",
        )
        parser.add_argument(
            "--create-default-bucket",
            action="store_true",
            dest="with_default_bucket",
            help="With --prepare-only: also create the SDK's default bucket, in an S3 store that is "
            "already up (compose.yaml's API container does this before it serves).",
        )

    def handle(self, *args, prepare_only: bool, with_default_bucket: bool, **options):
        data_dir = Path(settings.DATA_DIR)
        env_file = prepare_data_dir(
            data_dir,
            settings.SAGEPORT_API_URL,
            settings.SAGEPORT_RUNTIME_URL,
            settings.SAGEPORT_S3_ENDPOINT_URL,
            settings.SAGEPORT_REGION,
        )
        reset_metrics_dir(data_dir)  # before any of the stack's processes starts
        if prepare_only:
            if with_default_bucket:
                self._create_default_bucket(data_dir)
            return
        specs = [
            redis_spec(data_dir, settings.CELERY_BROKER_URL),
            *s3_specs(data_dir, settings.SAGEPORT_S3_ENDPOINT_URL, platform_s3_key()),
            api_spec(data_dir, settings.SAGEPORT_API_ADDRESS, settings.SAGEPORT_PORT),
            runtime_spec(data_dir, settings.SAGEPORT_API_ADDRESS, settings.SAGEPORT_RUNTIME_PORT),
            worker_spec(data_dir),
            beat_spec(data_dir),
        ]
        with stop_on_signals() as stop_event:
            supervisor = supervisor_for(self.stdout, data_dir, stop_event)
            try:
                self._start_all(supervisor, specs)
                create_default_bucket(data_dir)
                self._print_banner(supervisor, specs, data_dir, env_file)
                supervisor.run()  # restarts a child that dies, until Ctrl-C or SIGTERM
            except StopRequested:
                self.stdout.write("Stopping...")
            except ServiceFailed as error:
                raise CommandError(str(error)) from None
            finally:
                supervisor.stop_all()
        self.stdout.write("Stopped.")

    def _create_default_bucket(self, data_dir: Path) -> None:
        try:
            create_default_bucket(data_dir)
        except ServiceFailed as error:
            raise CommandError(str(error)) from None

    def _start_all(self, supervisor: Supervisor, specs) -> None:
        for spec in specs:
            self.stdout.write(f"  starting {spec.name:<10}", ending="")
            self.stdout.flush()
            started = time.monotonic()
            try:
                supervisor.start(spec)
            except ServiceFailed:
                self.stdout.write(self.style.ERROR("failed"))
                raise
            self.stdout.write(f"ready in {time.monotonic() - started:.1f}s")

    def _print_banner(self, supervisor: Supervisor, specs, data_dir: Path, env_file: Path) -> None:
        self.stdout.write(self.style.SUCCESS(READY_BANNER))
        for spec in specs:
            where = spec.listens or "running"
            self.stdout.write(f"  {spec.name:<10} {where:<28} log: {supervisor.log_path(spec.name)}")
        self.stdout.write(f"  data       {data_dir}")
        self.stdout.write(f"Point boto3, the AWS CLI and the SageMaker SDK at it with:  source {env_file}")
        self.stdout.write(
            f"Console: {settings.SAGEPORT_API_URL}/console/  (sign in with AWS_ACCESS_KEY_ID and "
            f"AWS_SECRET_ACCESS_KEY from {env_file}; an operator account: "
            ".venv/bin/python manage.py createsuperuser)"
        )
        self.stdout.write("Press Ctrl-C to stop.")
