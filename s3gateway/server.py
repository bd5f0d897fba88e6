"""The gateway's HTTP server: one thread per connection (`ThreadingHTTPServer`, HTTP/1.1
keep-alive), at most MAX_CONNECTIONS at once (more wait in the listen backlog).

Threads fit the work: a request spends its time waiting on sockets (the client, the store),
bodies stream through in bounded pieces, and Python's hashing and HMAC release the GIL on large
buffers; on a 2-core machine the store's own copying is the larger cost. Every socket has a
timeout, so a stalled client or store ties up one thread for a bounded time only."""

import http.client
import logging
import time
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone
from django.utils.module_loading import import_string
from prometheus_client import Histogram

from protocol.authentication import own_regions
from protocol.bounded_server import BoundedThreadingHTTPServer
from s3gateway import body, signature
from s3gateway.errors import S3Error
from s3gateway.pipeline import Pipeline, Response
from s3gateway.sse import MultipartKeys
from s3gateway.upstream import Upstream

log = logging.getLogger("sageport.s3gateway")

# Summed with the API's own metrics by its /metrics (one multiprocess directory for the stack).
# Labels are bounded: the methods http.server dispatches, the statuses S3 answers, "aborted".
REQUEST_SECONDS = Histogram(
    "sageport_s3_gateway_request_seconds", "S3 gateway requests by method and status, with their latency",
    ["method", "status"],
)
MAX_CONNECTIONS = 128
CLIENT_TIMEOUT_SECONDS = 120.0  # idle keep-alive connections and stalled uploads
UPSTREAM_TIMEOUT_SECONDS = 300.0  # one socket operation against the store (a large copy is slow)
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "expect",
    "proxy-connection",
}


def resolve_credentials(access_key_id: str) -> tuple[str, str] | None:
    """The platform key (account "") or a Sageport access key of an account."""
    if access_key_id == settings.SAGEPORT_S3_ACCESS_KEY_ID:
        return settings.SAGEPORT_S3_SECRET_ACCESS_KEY, ""
    return import_string(settings.SAGEPORT_CREDENTIAL_RESOLVER)(access_key_id)


class GatewayServer(BoundedThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], pipeline: Pipeline):
        self.pipeline = pipeline
        super().__init__(address, GatewayHandler, MAX_CONNECTIONS)


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CLIENT_TIMEOUT_SECONDS
    server: GatewayServer

    def handle_expect_100(self) -> bool:
        return True  # 100 Continue only once the request is authorised (`continue_body`)

    def do_any(self) -> None:
        started = time.monotonic()
        request_id = uuid.uuid4().hex[:16].upper()
        split = urlsplit(self.path)
        raw_path = split.path or "/"
        status, account, caller = 500, "-", "-"
        self._reader: body.BoundedReader | None = None
        try:
            request = signature.S3Request(
                self.command, raw_path, signature.parse_query(split.query), self._lower_headers()
            )
            response = self.server.pipeline.handle(request, self, request_id)
            status, account, caller = response.status, response.account, response.caller
            self._send(response, request_id)
        except S3Error as error:
            status = error.status
            self._send_error(error, raw_path, request_id)
        except DatabaseError as error:  # always before a response starts: keys and owners come first
            status = 503
            log.warning("the database did not answer: %s", error)
            self._send_error(S3Error(503, "ServiceUnavailable", "Please reduce your request rate."),
                             raw_path, request_id)
        except (OSError, http.client.HTTPException) as error:  # a side went away mid-stream
            status = "aborted"
            log.info("connection dropped mid-stream: %s", error.__class__.__name__)
            self.close_connection = True
        finally:
            close_old_connections()
            REQUEST_SECONDS.labels(self.command, str(status)).observe(time.monotonic() - started)
            # The metric counts requests and failures are logged; every request only with the
            # access log on (SAGEPORT_S3_ACCESS_LOG).
            level = logging.INFO if settings.SAGEPORT_S3_ACCESS_LOG else logging.DEBUG
            if status == "aborted" or int(status) >= 500:
                level = logging.WARNING
            log.log(level, "%s %s %s caller=%s account=%s %.0fms", self.command, raw_path, status, caller,
                    account, (time.monotonic() - started) * 1000)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_any

    # --- what the pipeline needs from the connection ---

    def continue_body(self) -> body.BoundedReader:
        if self.headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        self._reader = body.BoundedReader(self.rfile, self._content_length())
        return self._reader

    def _content_length(self) -> int:
        value = self.headers.get("content-length")
        if value is None:
            if self.headers.get("transfer-encoding"):
                raise S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
            return 0
        if not value.isdigit():
            raise S3Error(400, "InvalidArgument", "Content-Length must be a number of bytes.")
        return int(value)

    # --- responses ---

    def _lower_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            name = name.lower()
            headers[name] = f"{headers[name]},{value}" if name in headers else value
        return headers

    def _send(self, response: Response, request_id: str) -> None:
        self.send_response_only(response.status)
        length = None
        for name, value in response.headers:
            lowered = name.lower()
            if lowered in _HOP_BY_HOP or lowered in ("date", "server", "x-amz-request-id"):
                continue
            if lowered == "content-length":
                length = value
            self.send_header(name, value)
        self.send_header("x-amz-request-id", request_id)
        self.send_header("Date", self.date_time_string())
        no_body = self.command == "HEAD" or response.status in (204, 304)
        chunked = length is None and not no_body
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self._finish_headers()
        try:
            for piece in response.body:
                if no_body:
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()

    def _send_error(self, error: S3Error, resource: str, request_id: str) -> None:
        content = error.to_xml(resource, request_id)
        self.send_response_only(error.status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("x-amz-request-id", request_id)
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(content)))
        self._finish_headers()
        if self.command != "HEAD":
            self.wfile.write(content)

    def _finish_headers(self) -> None:
        # A request body left unread (refused before it was read) would be taken for the next request.
        if self._content_length_unread():
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()

    def _content_length_unread(self) -> bool:
        if self._reader is not None:
            return self._reader.remaining > 0
        return self.headers.get("content-length", "0") not in ("", "0") or bool(
            self.headers.get("transfer-encoding")
        )

    def log_message(self, format: str, *args) -> None:
        pass  # one line per request is logged by do_any


def build_server(address: tuple[str, int], upstream_url: str) -> GatewayServer:
    upstream = Upstream(
        upstream_url,
        settings.SAGEPORT_S3_ACCESS_KEY_ID,
        settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
        settings.SAGEPORT_S3_REGION,
        UPSTREAM_TIMEOUT_SECONDS,
    )
    pipeline = Pipeline(
        upstream,
        resolve_credentials,
        now=timezone.now,
        max_skew=timedelta(seconds=settings.SAGEPORT_SIGV4_MAX_SKEW_SECONDS),
        multipart=MultipartKeys(),
        scope_regions=signature.Regions(settings.SAGEPORT_S3_REGION, own_regions()),
    )
    return GatewayServer(address, pipeline)
