"""Copying a container's output into its CloudWatch stream (logs/container_logs.py): every line
once, in order, however the copy is sliced; a large copy is stored in short transactions."""

import pytest

from logs import container_logs, store
from runtime.base import ContainerSpec
from runtime.fake import FakeRuntime


@pytest.fixture
def chatty(db):
    runtime = FakeRuntime(images=["img"])
    runtime.run(ContainerSpec(name="chatty", image="img", labels={}, command=[]))
    for index in range(5000):
        runtime.print("chatty", f"line {index:04d}", stream="stderr" if index % 7 == 0 else "stdout")
    return runtime


def test_a_bounded_copy_takes_slices_until_caught_up(chatty):
    stream = store.get_stream("123456789012", "us-east-1", "/aws/sagemaker/TransformJobs", "job/algo-1-1")
    looks = 0
    while not container_logs.collect(chatty, "chatty", stream, max_bytes=8192):
        looks += 1
    assert looks == 5  # 45,000 bytes of messages, about 8 kB a look
    assert [message for _, message in store.read(stream)] == [f"line {index:04d}" for index in range(5000)]


def test_a_large_copy_commits_in_batches(chatty, monkeypatch):
    commits = []
    original = store.append

    def counted(stream, events, cursor):
        commits.append(len(events))
        original(stream, events, cursor)

    monkeypatch.setattr(store, "append", counted)
    stream = store.get_stream("123456789012", "us-east-1", "/aws/sagemaker/TransformJobs", "job/algo-1-2")
    assert container_logs.collect(chatty, "chatty", stream)
    assert commits == [2000, 2000, 1000]
    assert len(store.read(stream)) == 5000
