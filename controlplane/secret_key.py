"""The installation's own Django secret key, generated on first start and kept in the data dir
so that every process of the stack (API, worker, beat, manage.py) signs with the same one."""
import os
import secrets
from pathlib import Path

from controlplane.startup import SettingsError


def load_or_create(path: Path) -> str:
    """The key stored at `path`, created (mode 0600) if there is none. Processes starting at the
    same moment agree: each writes a private file and links it into place, and only the first
    link succeeds, so nobody ever reads a half-written key."""
    if not path.exists():
        _create(path)
    key = path.read_text().strip()
    if not key:
        raise SettingsError(f"the secret key file {path} is empty: delete it to generate a new key")
    return key


def _create(path: Path) -> None:
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as draft_file:
            draft_file.write(secrets.token_urlsafe(50) + "\n")
            draft_file.flush()
            os.fsync(draft_file.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process created it first: its key is the one
    finally:
        draft.unlink(missing_ok=True)
