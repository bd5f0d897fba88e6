"""The API port's connections to the serving containers, for its synchronous Django view
(invocations.py): a urllib3 pool per container (router.py keeps them, and closes those of
containers that left the table) keeps connections alive between requests. They behave as the
data plane's (upstream.py) through exchange.py: the same socket options (a connection to a lost
host ends after `UNACKNOWLEDGED_SECONDS`), timeouts and outcomes, and a request that a kept-alive
connection lost before any answer goes once more on a new connection."""

import errno
import threading
from types import SimpleNamespace

from django.conf import settings
from urllib3 import HTTPConnectionPool, Timeout
from urllib3.connection import HTTPConnection
from urllib3.exceptions import ConnectTimeoutError, HTTPError, ReadTimeoutError

from hosting.runtime_api import exchange
from hosting.runtime_api.exchange import Answer, NoAnswer, TimedOut

POOL_CONNECTIONS_PER_CONTAINER = 16

# Whether the exchange under way in this thread opened its connection (else it reused one): urllib3
# does not tell, and a pool's connections are taken and opened in the calling thread.
_opened = threading.local()


class _NotedConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _opened.connection = True


def new_pool(address: str, port: int, maxsize: int = POOL_CONNECTIONS_PER_CONTAINER) -> HTTPConnectionPool:
    timeout = Timeout(connect=exchange.CONNECT_TIMEOUT_SECONDS,
                      read=settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS)
    pool = HTTPConnectionPool(address, port, maxsize=maxsize, retries=False, timeout=timeout,
                              socket_options=list(exchange.SOCKET_OPTIONS))
    pool.ConnectionCls = _NotedConnection
    return pool


def post(
    pool: HTTPConnectionPool, body: bytes, headers: dict[str, str],
    method: str = "POST", path: str = "/invocations",
) -> Answer:
    """POST /invocations (or `method` `path`: a multi-model container's model management) to the
    pool's container; raises Refused, NoAnswer or TimedOut."""
    attempt = SimpleNamespace(reused=False, answered=False, method=method, path=path)
    try:
        return _exchange(pool, body, headers, attempt)
    except NoAnswer:
        if not exchange.may_send_again(attempt.reused, attempt.answered):
            raise
    with new_pool(pool.host, pool.port, maxsize=1) as fresh:
        again = SimpleNamespace(reused=False, answered=False, method=method, path=path)
        return _exchange(fresh, body, headers, again)


def _exchange(pool: HTTPConnectionPool, body: bytes, headers: dict[str, str], attempt) -> Answer:
    _opened.connection = False
    try:
        response = pool.urlopen(attempt.method, attempt.path, body=body, headers=headers, redirect=False,
                                assert_same_host=False, preload_content=False)
    except ConnectTimeoutError:  # also NewConnectionError: refused, or not accepted in 250 ms
        raise exchange.Refused() from None
    except HTTPError as error:
        raise _failure(error) from None
    finally:
        attempt.reused = not _opened.connection
    attempt.answered = True
    try:
        return Answer(response.status, response.headers, response.read())
    except HTTPError as error:
        raise _failure(error) from None
    finally:
        response.release_conn()


def _failure(error: HTTPError) -> NoAnswer | TimedOut:
    """A read that timed out is the invocation timeout, unless the kernel ended the connection
    (ETIMEDOUT: what it sent stayed unacknowledged, the host is lost): then there was no answer."""
    if isinstance(error, ReadTimeoutError) and getattr(error.__cause__, "errno", None) != errno.ETIMEDOUT:
        return TimedOut()
    return NoAnswer(str(error) or type(error).__name__)
