"""Requests to one transform container: `GET /execution-parameters` and `POST /invocations`.

Each sending thread keeps its own keep-alive connection (a connection carries one request at a
time). ModelClientConfig bounds each request (InvocationsTimeoutInSeconds) and how often a
request that failed for want of an answer (a timeout, a broken connection, a 5xx) is sent again
(InvocationsMaxRetries); an answer the model gives with a 4xx status is its verdict, never retried.
A streamed body (one request carrying a whole object) cannot be sent again.

Answers are read in chunks (with Content-Length or `Transfer-Encoding: chunked`, as http.client
frames them): one up to `memory_bytes` is returned as bytes, a larger one spills to a temporary
file, and one over MAX_ANSWER_BYTES is refused. So a container that floods its answer costs the
worker disk up to that bound, never memory."""

import http.client
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

from django.conf import settings

from hosting.health import PLATFORM_USER_AGENT

EXCERPT_BYTES = 1024
READ_BYTES = 1 << 16
# The most one answer may hold: answers wait (spilled to disk past `memory_bytes`) until written
# in order, so a container that floods its answer fails the object instead of filling the
# worker's disk. SageMaker documents no limit for batch transform; this is 2.5x the largest
# payload a request may carry (100 MB).
MAX_ANSWER_BYTES = 256 * 1024 * 1024
# SageMaker's words in the data log for a request unanswered within InvocationsTimeoutInSeconds
# (callers match on them: grand-challenge.org's SageMaker batch backend reads the data log for
# "Model server did not respond to /invocations request within").
TIMED_OUT = "Model server did not respond to /invocations request within {seconds:g} seconds"

Answer = bytes | BinaryIO  # a file: an answer over `memory_bytes`, at its start; the reader closes it


class ModelError(Exception):
    """The container did not answer a payload with 200; `status` is None without an answer."""

    def __init__(self, status: int | None, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class AnswerTooLarge(http.client.HTTPException):
    """An answer over MAX_ANSWER_BYTES; the connection is dropped unread."""


class ModelClient:
    def __init__(
        self,
        port: int,
        content_type: str | None,
        accept: str | None,
        timeout: float,
        retries: int,
        memory_bytes: int = READ_BYTES,
    ):
        self._port = port
        self._timeout = timeout
        self._retries = retries
        self._memory_bytes = memory_bytes
        self._headers = {"User-Agent": PLATFORM_USER_AGENT}
        if content_type:
            self._headers["Content-Type"] = content_type
        if accept:
            self._headers["Accept"] = accept
        self._local = threading.local()

    def execution_parameters(self) -> dict | None:
        """The container's answer to GET /execution-parameters; None when it serves none."""
        try:
            status, body = self._request("GET", "/execution-parameters", None, {})
            answer = json.loads(_bytes(body)) if status == 200 else None
        except (OSError, http.client.HTTPException, ValueError):
            return None
        return answer if isinstance(answer, dict) else None

    def invoke(self, body: bytes | Iterator[bytes]) -> Answer:
        attempts = 1 if not isinstance(body, bytes) else 1 + self._retries
        for attempt in range(1, attempts + 1):
            try:
                status, answer = self._request("POST", "/invocations", body, self._headers)
            except TimeoutError:
                error = ModelError(None, TIMED_OUT.format(seconds=self._timeout))
            except AnswerTooLarge as failure:
                raise ModelError(None, str(failure)) from None  # the same request would flood again
            except (OSError, http.client.HTTPException) as failure:
                error = ModelError(
                    None, f"the request to the model failed: {failure or type(failure).__name__}"
                )
            else:
                if status == 200:
                    return answer
                excerpt = _bytes(answer)[:EXCERPT_BYTES]
                error = ModelError(status, excerpt.decode("utf-8", errors="replace"))
                if status < 500:
                    raise error
            if attempt == attempts:
                raise error
        raise AssertionError("unreachable")

    def _request(self, method: str, path: str, body, headers: dict) -> tuple[int, Answer]:
        reused = getattr(self._local, "connection", None) is not None
        try:
            return self._exchange(method, path, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # A kept-alive connection the server closed while idle: that is no failure of the
            # request, which goes again on a new connection (a streamed body cannot).
            if not reused or not isinstance(body, bytes | None):
                raise
            return self._exchange(method, path, body, headers)

    def _exchange(self, method: str, path: str, body, headers: dict) -> tuple[int, Answer]:
        connection = self._connection()
        try:
            connection.request(
                method, path, body=body, headers=headers, encode_chunked=not isinstance(body, bytes | None)
            )
            # The model's time runs once the body is sent (a streamed object may take long to
            # send; each write is bounded by the socket's timeout meanwhile).
            deadline = time.monotonic() + self._timeout
            response = connection.getresponse()
            return response.status, self._read(response, deadline)
        except BaseException:
            connection.close()  # a half-read answer must not be read as the next request's
            self._local.connection = None
            raise

    def _read(self, response: http.client.HTTPResponse, deadline: float) -> Answer:
        """The answer, in chunks as they arrive: bytes up to `memory_bytes`, else a temporary
        file. InvocationsTimeoutInSeconds bounds the whole answer, so a trickle cannot hold the
        request open past it."""
        spool = tempfile.SpooledTemporaryFile(max_size=self._memory_bytes)
        try:
            size = 0
            while chunk := response.read1(READ_BYTES):
                if time.monotonic() > deadline:
                    raise TimeoutError()
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge(
                        f"the model's answer to one request is over {MAX_ANSWER_BYTES} bytes"
                    )
                spool.write(chunk)
            response.read()  # ends the answer, so that the connection may carry the next request
            spool.seek(0)
            if size <= self._memory_bytes:
                with spool:
                    return spool.read()
            return spool
        except BaseException:
            spool.close()
            raise

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(
                settings.SAGEPORT_NODE_ADDRESS, self._port, timeout=self._timeout
            )
            self._local.connection = connection
        return connection


def _bytes(answer: Answer) -> bytes:
    """A short answer (an error's, the execution parameters) as bytes: a file is read up to
    EXCERPT_BYTES and closed."""
    if isinstance(answer, bytes):
        return answer
    with answer:
        return answer.read(EXCERPT_BYTES)
