"""The checkpoint writes AWS's `amzn-sagemaker-checkpointing` library reports failed in a
HyperPodPyTorchJob's replicas, so that no failed write goes unseen.

The library never raises when its in-memory write fails and S3 takes the step (nor for an
`async_save` whose future nobody checks): it logs an ERROR line from its writer's logger
(`sagemaker.checkpointing.writer.rank_<r>`) to the console and to
`/var/log/sagemaker_checkpointing/<namespace>_checkpointing.log` (storage_base.py: the file gets
its records whatever the script's log level; ERROR passes the root logger's default WARNING).
Every replica has that directory mounted from the node (elastic/replicas.py), and the operator
reads the newest writer ERROR line of each while the job runs. Its reader's ERROR lines are not
failed writes (a first start finds no checkpoint and logs one) and are left out."""
import os
from pathlib import Path

from storage import safe_files

# The line format of the library's file handler (storage_base.py):
# [time] [namespace] [logger name] [LEVEL] [file:line] message
_WRITER_ERROR = "] [sagemaker.checkpointing.writer."
_ERROR_LEVEL = "] [ERROR] ["
_LOG_SUFFIX = "_checkpointing.log"
# The newest lines are at the end; a tail this long holds the newest error of any real log.
TAIL_BYTES = 64 * 1024
MAX_LOG_FILES = 16


def newest_write_error(log_directory: Path) -> str | None:
    """The newest writer ERROR line of the library's logs in the directory (the container's:
    read without following links, at most the tail of a few files), None without one."""
    try:
        names = sorted(name for name in os.listdir(log_directory) if name.endswith(_LOG_SUFFIX))
    except OSError:  # the directory went with its replica
        return None
    found = []
    for name in names[:MAX_LOG_FILES]:
        try:
            with safe_files.open_regular(log_directory, name) as log:
                size = os.fstat(log.fileno()).st_size
                log.seek(max(size - TAIL_BYTES, 0))
                line = _last_error(log.read(TAIL_BYTES))
                if line:
                    found.append((os.fstat(log.fileno()).st_mtime, line))
        except (OSError, safe_files.UnsafeFile):
            continue  # gone, or not a file of the library's
    return max(found)[1] if found else None


def _last_error(tail: bytes) -> str | None:
    for line in reversed(tail.decode("utf-8", "replace").splitlines()):
        if _WRITER_ERROR in line and _ERROR_LEVEL in line:
            return line.strip()
    return None
