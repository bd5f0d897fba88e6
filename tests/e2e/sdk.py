"""The SageMaker Python SDK (v2) in the end-to-end tests: configured as a user would configure
it, by the stack's env file alone (the `sdk_session` fixture in conftest.py), made quick."""
import threading
import time

import sagemaker.session as sdk_session_module  # the SDK; `sagemaker` is the boto3 client fixture

from tests.conftest import read_env_file

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"


class FastClock:
    """Stands in for the `time` module inside sagemaker.session. The SDK reads logs every 10 s
    and the job's status every 30 s; here each sleep lasts at most `longest` real seconds and
    time() runs ahead by what was skipped, so the SDK's loop keeps its order but not its length."""

    def __init__(self, longest: float):
        self.longest = longest
        self.skipped = 0.0

    def sleep(self, seconds: float) -> None:
        real = min(seconds, self.longest)
        time.sleep(real)
        self.skipped += seconds - real

    def time(self) -> float:
        return time.time() + self.skipped


class WatchedOutput:
    """sys.stdout that keeps what is printed and signals when `line` has been printed (the SDK
    prints progress dots before the first log line without a line break, so it is searched for
    as text)."""

    def __init__(self, line: str):
        self.line = line
        self.text = ""
        self.printed = threading.Event()

    def write(self, text: str) -> int:
        self.text += text
        if self.line in self.text:
            self.printed.set()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def sdk_session(stack, monkeypatch) -> sdk_session_module.Session:
    """A SageMaker SDK session configured as a user would: the stack's `env` file exported and
    nothing else (the SDK's telemetry opt-out and default bucket come from the file it names)."""
    for variable, value in read_env_file(stack.data_dir / "env").items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(sdk_session_module, "time", FastClock(longest=0.5))
    return sdk_session_module.Session()
