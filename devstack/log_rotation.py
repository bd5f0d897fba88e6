"""Size-based rotation of the stack's per-child log files, by copy and truncate.

Children write to a file descriptor they inherited (opened for appending), so the file cannot be
renamed under them: `<name>.log` is copied to `<name>.log.1` (older copies shifted up to
`.<backups>`, the oldest dropped) and then truncated to zero; the children's next appends land at
its new end. Lines written between the copy and the truncation are lost (a few lines, once per
`max_bytes`): the price of never restarting a child to rotate its log."""
import shutil
from pathlib import Path


def rotate_if_large(path: Path, max_bytes: int, backups: int) -> bool:
    """Rotate `path` when it is larger than `max_bytes`; True if it was rotated."""
    try:
        if path.stat().st_size <= max_bytes:
            return False
    except FileNotFoundError:
        return False
    for index in range(backups - 1, 0, -1):
        older = path.with_name(f"{path.name}.{index}")
        if older.exists():
            older.replace(path.with_name(f"{path.name}.{index + 1}"))
    if backups > 0:
        shutil.copyfile(path, path.with_name(f"{path.name}.1"))
    with open(path, "r+b") as log_file:
        log_file.truncate(0)
    return True
