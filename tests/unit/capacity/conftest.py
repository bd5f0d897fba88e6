import pytest

from capacity import swarm, swarm_join
from runtime.fake import FakeRuntime


@pytest.fixture(autouse=True)
def engine(monkeypatch) -> FakeRuntime:
    """The node's engine (in no swarm unless a test puts it in one): registration asks it."""
    fake = FakeRuntime()
    monkeypatch.setattr(swarm, "get_runtime", lambda: fake)
    monkeypatch.setattr(swarm_join, "get_runtime", lambda: fake)
    return fake
