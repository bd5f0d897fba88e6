"""CreateBucket reaches the store one request at a time (s3gateway/pipeline.py says why: the bundled
SeaweedFS stopped answering for good after concurrent creations), while other requests, those to
buckets that exist, still run side by side."""
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from s3gateway import signature
from s3gateway.pipeline import Pipeline
from s3gateway.sse import MultipartKeys

CLIENTS = 6
STORE_SECONDS = 0.2  # how long the fake store takes over a request: long enough to overlap


class CountingStore:
    """An upstream that answers 200 after a while and records the most requests it had at once."""

    def __init__(self):
        self.lock, self.now, self.most = threading.Lock(), 0, 0
        self.released = threading.Event()

    def request(self, method, raw_path, query, headers, pieces):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        self.released.wait(STORE_SECONDS)
        with self.lock:
            self.now -= 1
        return _Connection(), _Answer()


class _Answer:
    status = 200

    def getheaders(self):
        return [("Content-Length", "0")]

    def read(self, amount=None):
        return b""


class _Connection:
    def close(self):
        pass


@pytest.fixture
def platform_caller(monkeypatch):
    caller = signature.Caller("platform-key", "", "us-east-1", signature.UNSIGNED_PAYLOAD, "", "", b"", "")
    monkeypatch.setattr(signature, "authenticate", lambda *args: caller)


def send_together(store: CountingStore, requests: list[signature.S3Request]) -> list[int]:
    pipeline = Pipeline(store, resolve=None, now=lambda: datetime.now(UTC), max_skew=timedelta(minutes=15),
                        multipart=MultipartKeys())
    with ThreadPoolExecutor(CLIENTS) as pool:
        responses = list(pool.map(lambda request: pipeline.handle(request, None, "request-id"), requests))
    return [response.status for response in responses]


@pytest.mark.django_db(transaction=True)
def test_bucket_creations_reach_the_store_one_at_a_time(platform_caller):
    store = CountingStore()
    creations = [signature.S3Request("PUT", f"/new-bucket-{n}", (), {}) for n in range(CLIENTS)]

    assert send_together(store, creations) == [200] * CLIENTS
    assert store.most == 1


@pytest.mark.django_db(transaction=True)
def test_object_requests_still_run_side_by_side(platform_caller):
    store = CountingStore()
    reads = [signature.S3Request("GET", f"/a-bucket/key-{n}", (), {}) for n in range(CLIENTS)]

    assert send_together(store, reads) == [200] * CLIENTS
    assert store.most > 1
