"""The tier's two HTTP listeners, in the house pattern (s3gateway/server.py): `ThreadingHTTPServer`,
HTTP/1.1 keep-alive, a thread per connection and at most MAX_CONNECTIONS at once (the rest wait
in the backlog), a timeout on every socket. Threads fit: a request waits on sockets and files,
bodies stream in 1 MiB pieces, and xxhash releases the GIL on large buffers.

The container listener identifies its caller by source address (identity.py); the peer listener
by the installation's token (`X-Sageport-Tier-Token`, compared in constant time) and takes the
account from `X-Sageport-Tier-Account`. Both answer `GET /health` to anyone."""

import hmac
import http.client
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from protocol.bounded_server import BoundedThreadingHTTPServer
from tier.api import LocalApi, Request, Response, error_response, json_response
from tier.errors import TierError, bad_request
from tier.identity import Caller, caller_of_job, is_account
from tier.peers import ACCOUNT_HEADER, JOB_HEADER, TOKEN_HEADER

log = logging.getLogger("sageport.tier")

MAX_CONNECTIONS = 128
MAX_CONNECTIONS_PER_ADDRESS = 32  # a rank's client keeps one or two; DCP threads add a few
CLIENT_TIMEOUT_SECONDS = 120.0  # idle keep-alive connections and stalled bodies

Authenticate = Callable[["TierHandler"], Caller]


def container_callers(job_of: Callable[[str], str | None]) -> Authenticate:
    def authenticate(handler: "TierHandler") -> Caller:
        job_arn = job_of(handler.client_address[0])
        caller = caller_of_job(job_arn) if job_arn else None
        if caller is None:
            raise TierError(403, "AccessDenied",
                            "Only the containers of Sageport training jobs and HyperPodPyTorchJobs "
                            "on this node may use its checkpoint tier.")
        return caller

    return authenticate


def peer_callers(token: str) -> Authenticate:
    expected = token.encode()

    def authenticate(handler: "TierHandler") -> Caller:
        if not hmac.compare_digest(handler.headers.get(TOKEN_HEADER, "").encode(), expected):
            raise TierError(403, "AccessDenied", f"A peer request needs the installation's {TOKEN_HEADER}.")
        account = handler.headers.get(ACCOUNT_HEADER, "")
        if not is_account(account):
            raise bad_request(f"{ACCOUNT_HEADER} must be a 12-digit account.")
        return Caller(account, handler.headers.get(JOB_HEADER) or None)

    return authenticate


class BoundedReader:
    """The request body: at most `length` bytes of the connection. `before_first_read` sends the
    100 Continue a client that asked for one waits for: only once the write was accepted."""

    def __init__(self, stream, length: int, before_first_read: Callable[[], None] | None = None):
        self._stream = stream
        self._before_first_read = before_first_read
        self.remaining = length

    def read(self, size: int) -> bytes:
        if self._before_first_read:
            self._before_first_read()
            self._before_first_read = None
        piece = self._stream.read(min(size, self.remaining)) if self.remaining else b""
        self.remaining -= len(piece)
        return piece


class TierServer(BoundedThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], api: LocalApi, authenticate: Authenticate):
        self.api = api
        self.authenticate = authenticate
        self._busy = 0
        self._idle = threading.Condition()
        self._open: dict[object, str] = {}  # connection → source address
        super().__init__(address, TierHandler, MAX_CONNECTIONS)

    def verify_request(self, request, client_address) -> bool:
        """One caller (a hostile container) cannot hold every connection slot of the node."""
        with self._idle:
            if list(self._open.values()).count(client_address[0]) >= MAX_CONNECTIONS_PER_ADDRESS:
                log.warning("tier: %s already holds %d connections; refusing another", client_address[0],
                            MAX_CONNECTIONS_PER_ADDRESS)
                return False
            self._open[request] = client_address[0]
            return True

    def shutdown_request(self, request) -> None:
        with self._idle:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request, client_address) -> None:
        # socketserver prints tracebacks to stderr; a caller that hung up is not an error
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.debug("tier: connection from %s ended: %s", client_address[0], error)
        else:
            log.exception("tier: connection from %s failed", client_address[0])

    def request_started(self) -> None:
        with self._idle:
            self._busy += 1

    def request_finished(self) -> None:
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Whether every request in flight finished within `timeout` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)


class TierHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CLIENT_TIMEOUT_SECONDS
    server: TierServer
    _expects_continue = False

    def setup(self) -> None:
        super().setup()
        # headers and body go out as separate writes: without this, Nagle and the client's
        # delayed ACK add 40 ms to every answer
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_expect_100(self) -> bool:
        self._expects_continue = True  # answered by the body's first read (BoundedReader)
        return True

    def _send_continue(self) -> None:
        self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def do_any(self) -> None:
        self.server.request_started()
        started = time.monotonic()
        try:
            status = self._serve()
        finally:
            self.server.request_finished()
        level = logging.WARNING if status == "aborted" or int(status) >= 500 else logging.DEBUG
        elapsed_ms = (time.monotonic() - started) * 1000
        log.log(level, "%s %s %s %.0fms", self.command, self.path[:200], status, elapsed_ms)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_any  # HEAD: http.server's 501

    def _serve(self) -> int | str:
        reader = None
        try:
            if self.command == "GET" and self.path == "/health":
                response = json_response({"status": "healthy"})
            else:
                length = self._content_length()
                caller = self.server.authenticate(self)
                send_continue = self._send_continue if self._expects_continue else None
                self._expects_continue = False
                reader = BoundedReader(self.rfile, length, send_continue)
                request = Request(self.command, self.path, self.headers, reader, length, caller)
                response = self.server.api.handle(request)
        except TierError as error:
            response = error_response(error)
        except (OSError, http.client.HTTPException) as error:  # the caller or a peer went away
            log.info("tier: connection dropped: %s", error)
            self.close_connection = True
            return "aborted"
        except Exception:
            log.exception("tier: %s %s failed", self.command, self.path[:200])
            response = error_response(TierError(500, "InternalError", "The tier failed; see its log."))
        unread = reader.remaining > 0 if reader else self.headers.get("Content-Length", "0") not in ("", "0")
        return self._send(response, unread)

    def _content_length(self) -> int:
        value = self.headers.get("Content-Length")
        if value is None:
            if self.headers.get("Transfer-Encoding"):
                raise TierError(411, "LengthRequired", "A body needs a Content-Length.")
            return 0
        if not value.isdigit():
            raise bad_request("Content-Length must be a number of bytes.")
        return int(value)

    def _send(self, response: Response, unread_body: bool) -> int | str:
        try:
            body = response.body
            length = len(body) if isinstance(body, bytes) else response.length
            self.send_response_only(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.send_header("Date", self.date_time_string())
            if unread_body:  # left unread (refused first), it would be taken for the next request
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            for piece in [body] if isinstance(body, bytes) else body:
                self.wfile.write(piece)
            return response.status
        except (OSError, http.client.HTTPException) as error:
            log.info("tier: connection dropped mid-answer: %s", error)
            self.close_connection = True
            return "aborted"
        finally:
            response.close()

    def log_message(self, format: str, *args) -> None:
        pass  # do_any logs one line per request (transfers are logged by the API)
