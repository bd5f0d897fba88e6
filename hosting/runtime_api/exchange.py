"""One InvokeEndpoint request sent to the serving containers (by upstream.py): the socket options
and timeouts its connections are held to, its outcomes (`Refused`, `NoAnswer`, `TimedOut`), and
when it is sent again (`may_send_again`); moving to another container is tries.py's.

A container whose host vanishes (its power or its link lost) leaves its kept-alive connections
open, and a request sent on one is never acknowledged: it would wait the whole invocation timeout.
Every connection ends when data it sent stays unacknowledged `UNACKNOWLEDGED_SECONDS`
(TCP_USER_TIMEOUT: a live container's kernel acknowledges at once, however long its model takes
to answer), so that such a request counts as unanswered on a reused connection, goes again on a
new one, which the lost host does not accept within 250 ms, and another container is tried (the
250 ms re-route of docs/operations.md, "Adding a node").

A kept-alive connection can also be closed by the container (its server's idle timeout) just as a
request is sent on it: the request fails before any answer, through no fault of the container.
Such a request is sent once more on a new connection: the container never answered, so it never
acted on it (HTTP/1.1, RFC 9112 section 9.3.1: a client may retry when the connection closed
before any part of the response). A request that fails on a new connection is not sent again."""

import socket
from collections.abc import Mapping
from dataclasses import dataclass

# Containers must accept a connection within 250 ms (SageMaker's contract).
CONNECT_TIMEOUT_SECONDS = 0.25
UNACKNOWLEDGED_SECONDS = 1.0  # far above a round trip between hosts, far below the invocation timeout
SOCKET_OPTIONS = (
    (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, round(UNACKNOWLEDGED_SECONDS * 1000)),
    # Nagle's algorithm would hold small requests back ~40 ms.
    (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
)


class Refused(Exception):
    """The container did not accept the connection (nothing was sent): try another one."""


class NoAnswer(Exception):
    """The container closed the connection or failed mid-request: it gave no answer."""


class TimedOut(Exception):
    """The container did not answer within the invocation timeout."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # looked up case-insensitively
    body: bytes


def may_send_again(reused: bool, answered: bool) -> bool:
    """Whether a request that got `NoAnswer` goes once more, on a new connection: only when it
    was sent on a kept-alive connection and no part of an answer came back."""
    return reused and not answered
