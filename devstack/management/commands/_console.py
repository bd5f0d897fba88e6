"""What `runstack` and `runnode` share: a supervisor set up from the settings that reports to the
command's output, one time-stamped line per event."""

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import OutputWrapper

from devstack.stack import Supervisor


def timestamped(stdout: OutputWrapper) -> Callable[[str], None]:
    def report(message: str) -> None:
        stdout.write(f"{datetime.now().isoformat(sep=' ', timespec='seconds')} {message}")
        stdout.flush()

    return report


def supervisor_for(stdout: OutputWrapper, data_dir: Path, stop_event: threading.Event) -> Supervisor:
    return Supervisor(
        data_dir / "logs",
        stop_event,
        report=timestamped(stdout),
        log_max_bytes=settings.SAGEPORT_LOG_MAX_MIB * 1024 * 1024,
        log_backups=settings.SAGEPORT_LOG_BACKUPS,
    )
