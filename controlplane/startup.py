"""What the settings module raises for a bad value, and how every entry point (manage.py, the
WSGI module, the Celery app) turns it into one line on stderr instead of a traceback."""
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Any non-zero status would do (the API's server reads the settings before it starts workers:
# controlplane/serve.py); 3 is what gunicorn, the API's server before, took for a boot error.
EXIT_STATUS = 3


class SettingsError(RuntimeError):
    """A setting's value cannot be used; the message names the variable."""


@contextmanager
def exit_on_settings_error() -> Iterator[None]:
    try:
        yield
    except SettingsError as error:
        print(f"sageport: {error}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_STATUS) from None
