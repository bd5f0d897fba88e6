"""A serverless variant's concurrency slots in Redis: never more taken than MaxConcurrency,
whichever threads race; given back when a request ends, lapsing when its process died; and the
idle window's peak, which says how many containers the variant still needs."""

import threading
import time
import uuid

from hosting import serverless_slots


def _deployment() -> int:
    return uuid.uuid4().int % 10**9  # keys of their own per test


def _poll(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_slots_past_max_concurrency_are_refused_until_one_is_given_back(redis_service):
    pk = _deployment()
    assert [serverless_slots.acquire(pk, "v", f"r{n}", 2) for n in range(3)] == [1, 2, None]
    serverless_slots.release(pk, "v", "r0")
    assert serverless_slots.acquire(pk, "v", "r3", 2) == 2
    assert serverless_slots.usage(pk, "v").in_flight == 2


def test_racing_requests_never_take_more_than_max_concurrency(redis_service):
    pk, taken = _deployment(), []
    start = threading.Barrier(12)

    def request(n: int) -> None:
        start.wait(timeout=10)
        taken.append(serverless_slots.acquire(pk, "v", f"r{n}", 5))

    threads = [threading.Thread(target=request, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(n for n in taken if n is not None) == [1, 2, 3, 4, 5]
    assert taken.count(None) == 7


def test_the_idle_window_remembers_the_peak_then_forgets_it(redis_service, settings):
    settings.SAGEPORT_SERVERLESS_IDLE_SECONDS = 0.5
    pk = _deployment()
    serverless_slots.acquire(pk, "v", "a", 5)
    serverless_slots.acquire(pk, "v", "b", 5)
    serverless_slots.release(pk, "v", "a")
    serverless_slots.release(pk, "v", "b")
    usage = serverless_slots.usage(pk, "v")
    assert (usage.in_flight, usage.recent_peak, usage.needed) == (0, 2, 2)
    assert _poll(lambda: serverless_slots.usage(pk, "v").needed == 0)


def test_a_slot_whose_process_died_lapses(redis_service, monkeypatch):
    monkeypatch.setattr(serverless_slots, "slot_seconds", lambda: 0.3)
    pk = _deployment()
    assert serverless_slots.acquire(pk, "v", "dead", 1) == 1
    assert serverless_slots.acquire(pk, "v", "next", 1) is None
    assert _poll(lambda: serverless_slots.acquire(pk, "v", "next", 1) == 1)
