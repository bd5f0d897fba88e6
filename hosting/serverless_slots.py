"""A serverless variant's concurrency, counted in Redis so that every serving process (the data
plane's, each API process) and the reconciler share one count.

Each request in flight holds a *slot*: a member of a sorted set whose score is when the slot
lapses (a process that dies mid-request frees it then). Taking a slot past MaxConcurrency is
refused: the request is throttled. Each slot taken or given back also notes, in a second sorted
set by time, how many were in flight then: the most in flight within the idle window is how many
containers the variant still needs (hosting/serverless_scaling.py). Both sets are read and written
by Lua scripts, atomically, with Redis's own clock, so processes on several hosts agree."""

import functools
from dataclasses import dataclass

import redis
from django.conf import settings

# KEYS: slots, peaks. ARGV: max concurrency, slot lifetime (s), request id, window (s), key TTL (s).
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return -1 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
n = n + 1
redis.call('ZADD', KEYS[2], now, n .. ':' .. ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[4]))
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return n
"""

# KEYS: slots, peaks. ARGV: request id, key TTL (s).
_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], now, n .. ':' .. ARGV[1] .. ':end')
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return n
"""

# KEYS: slots, peaks. ARGV: window (s). Returns {in flight, most in flight within the window}.
_USAGE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local peak = 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], now - tonumber(ARGV[1]), '+inf')) do
  local n = tonumber(string.match(member, '^(%d+):'))
  if n > peak then peak = n end
end
return {redis.call('ZCARD', KEYS[1]), peak}
"""


@dataclass(frozen=True)
class Usage:
    in_flight: int
    recent_peak: int  # the most in flight at once within the idle window

    @property
    def needed(self) -> int:
        return max(self.in_flight, self.recent_peak)


def slot_seconds() -> float:
    """How long a slot may be held: the cold start's wait and the exchange, each bounded by the
    invocation timeout, and some slack. A process that died holding it frees it then."""
    return 2 * settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS + 5


def acquire(deployment_pk: int, variant_name: str, request_id: str, max_concurrency: int) -> int | None:
    """Take a slot: how many are in flight with this one, or None past `max_concurrency`."""
    taken = _script(_ACQUIRE)(
        keys=_keys(deployment_pk, variant_name),
        args=[max_concurrency, slot_seconds(), request_id, _window(), _ttl()],
    )
    return None if int(taken) < 0 else int(taken)


def release(deployment_pk: int, variant_name: str, request_id: str) -> None:
    _script(_RELEASE)(keys=_keys(deployment_pk, variant_name), args=[request_id, _ttl()])


def usage(deployment_pk: int, variant_name: str) -> Usage:
    in_flight, peak = _script(_USAGE)(keys=_keys(deployment_pk, variant_name), args=[_window()])
    return Usage(int(in_flight), int(peak))


def _window() -> float:
    return settings.SAGEPORT_SERVERLESS_IDLE_SECONDS


def _ttl() -> int:
    return int(slot_seconds() + _window()) + 60


def _keys(deployment_pk: int, variant_name: str) -> list[str]:
    prefix = f"sageport:{settings.SAGEPORT_STACK_ID}:serverless:{deployment_pk}:{variant_name}"
    return [f"{prefix}:slots", f"{prefix}:peaks"]


@functools.cache
def _script(source: str) -> redis.commands.core.Script:
    return _client().register_script(source)


@functools.cache
def _client() -> redis.Redis:
    """One client (a thread-safe pool) per process, on the broker's Redis as routing's is."""
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)
