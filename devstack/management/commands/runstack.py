"""`manage.py runstack`: the whole embedded stack in the foreground, stopped by Ctrl-C."""

import time
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devstack.stack import (
    LOOPBACK,
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
    s3_specs,
    stop_on_signals,
    worker_spec,
)

READY_BANNER = "Sageport is running."  # scripts/up.sh waits for this line


class Command(BaseCommand):
    help = "Run Redis, SeaweedFS (S3), the API, a Celery worker and Celery beat until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument(
            "--prepare-only",
            action="store_true",
            help="Migrate the database, create the default access key, write <data>/env and the SDK's "
            "config, then exit.",
        )

    def handle(self, *args, prepare_only: bool, **options):
        data_dir = Path(settings.DATA_DIR)
        api_url = f"http://{LOOPBACK}:{settings.SAGEPORT_PORT}"
        env_file = prepare_data_dir(
            data_dir, api_url, settings.SAGEPORT_S3_ENDPOINT_URL, settings.SAGEPORT_REGION
        )
        reset_metrics_dir(data_dir)  # before any of the stack's processes starts
        if prepare_only:
            return
        specs = [
            redis_spec(data_dir, settings.CELERY_BROKER_URL),
            *s3_specs(data_dir, settings.SAGEPORT_S3_ENDPOINT_URL, platform_s3_key()),
            api_spec(data_dir, settings.SAGEPORT_PORT),
            worker_spec(data_dir),
            beat_spec(data_dir),
        ]
        with stop_on_signals() as stop_event:
            supervisor = Supervisor(
                data_dir / "logs",
                stop_event,
                report=self._report,
                log_max_bytes=settings.SAGEPORT_LOG_MAX_MIB * 1024 * 1024,
                log_backups=settings.SAGEPORT_LOG_BACKUPS,
            )
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

    def _report(self, message: str) -> None:
        self.stdout.write(f"{datetime.now().isoformat(sep=' ', timespec='seconds')} {message}")
        self.stdout.flush()

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
        self.stdout.write("Press Ctrl-C to stop.")
