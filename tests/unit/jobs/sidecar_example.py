"""A helper process for tests/unit/jobs/test_sidecars.py: waits until its spec's
`until` file is gone, or fails for good at once when the spec says so."""
import time
from pathlib import Path

from jobs import sidecars


def wait_or_fail(spec: dict) -> None:
    if spec.get("fail"):
        raise sidecars.HelperFailed(spec["fail"])
    while Path(spec["until"]).exists():
        time.sleep(0.05)


if __name__ == "__main__":
    sidecars.run_helper(wait_or_fail)
