"""Which resource a log line is about, and the JSON log format.

`reconcile_once` sets the resource (kind, name, account) for the duration of a step; every log
line written meanwhile, by any Sageport logger in that thread or task, carries it, so a worker's
log names the job or endpoint rather than only a Celery task id."""

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator

_resource: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("resource", default=None)


@contextlib.contextmanager
def about(kind: str, name: str, account: str = "") -> Iterator[None]:
    token = _resource.set({"kind": kind, "name": name, "account": account})
    try:
        yield
    finally:
        _resource.reset(token)


def current() -> dict[str, str] | None:
    return _resource.get()


class ResourceFilter(logging.Filter):
    """Puts the current resource on each record (as `resource`, None outside a reconcile)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.resource = _resource.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the resource, the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        resource = getattr(record, "resource", None) or _resource.get()
        if resource:
            line["resource"] = resource
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)
