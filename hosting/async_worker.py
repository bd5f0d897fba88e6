"""Carrying out one claimed asynchronous request (hosting/async_queue.py): read the input from S3,
POST it to the container the claim chose, write the answer to the output location, or what went
wrong to the failure location.

The output keys are the inference id's, so a request run again (its worker died after writing)
finds its object and only records it: one object per request. Both locations, and the input,
are checked against the endpoint's account where they are used (accounts/s3_tenancy.py)."""

import logging

import urllib3

from accounts import s3_tenancy
from hosting import async_queue
from hosting.health import PLATFORM_USER_AGENT
from hosting.models import AsyncInvocation, AsyncInvocationStatus, ServingContainer
from hosting.runtime_api import exchange
from storage.s3 import StorageError, get_bytes, list_keys, put_bytes

log = logging.getLogger(__name__)

ORIGINAL_MESSAGE_LIMIT = 4096
_http = urllib3.PoolManager(retries=False)


class _Failed(Exception):
    """The request failed; the message goes to the failure location."""


class _Again(Exception):
    """Nothing went wrong with the request itself (its container left, or refused the
    connection): it goes back to the queue."""


def process(pk: int) -> str:
    """Run the claimed row `pk`; returns the status it ended with."""
    row = AsyncInvocation.objects.select_related("endpoint").filter(pk=pk).first()
    if row is None:
        return AsyncInvocationStatus.FAILED  # its endpoint was deleted meanwhile, and the row with it
    account = row.endpoint.account_id
    try:
        if _written(account, row.output_location):
            return _finish(row, AsyncInvocationStatus.COMPLETED)
        if _written(account, row.failure_location):
            return _finish(row, AsyncInvocationStatus.FAILED)
        if not row.container_name:
            raise _Failed("Request expired: RequestTTLSeconds elapsed before it could be processed.")
        body = _read_input(account, row.input_location)
        output = _invoke(row, body)
        put_bytes(*s3_tenancy.location(account, row.output_location, "write"), output)
        return _finish(row, AsyncInvocationStatus.COMPLETED)
    except _Failed as failure:
        return _fail(row, account, str(failure))
    except StorageError as error:
        if not error.transient:
            return _fail(row, account, str(error))
        return _back_to_the_queue(row, error)
    except _Again as reason:
        return _back_to_the_queue(row, reason)


def _back_to_the_queue(row: AsyncInvocation, reason: Exception) -> str:
    log.info("async inference %s back to the queue: %s", row.inference_id, reason)
    async_queue.release(row.pk)
    return AsyncInvocationStatus.PENDING


def _fail(row: AsyncInvocation, account: str, message: str) -> str:
    try:
        put_bytes(*s3_tenancy.location(account, row.failure_location, "write"), message.encode())
    except StorageError as error:  # nowhere to write: the row keeps the reason
        log.warning("async inference %s: failure not written: %s", row.inference_id, error)
    return _finish(row, AsyncInvocationStatus.FAILED, message)


def _finish(row: AsyncInvocation, status: str, reason: str = "") -> str:
    async_queue.finish(row.pk, status, reason)
    return status


def _written(account: str, uri: str) -> bool:
    bucket, key = s3_tenancy.location(account, uri, "read")
    return key in list_keys(bucket, key)


def _read_input(account: str, uri: str) -> bytes:
    try:
        return get_bytes(*s3_tenancy.location(account, uri, "read"))
    except StorageError as error:
        if error.transient:
            raise
        raise _Failed(f"Could not read the input {uri}: {error}") from None


def _invoke(row: AsyncInvocation, body: bytes) -> bytes:
    container = ServingContainer.objects.select_related("node").filter(name=row.container_name).first()
    if container is None or container.host_port is None:
        raise _Again(f"container {row.container_name} is gone")
    timeout = urllib3.Timeout(connect=exchange.CONNECT_TIMEOUT_SECONDS, read=row.invocation_timeout_seconds)
    url = f"http://{container.node.address}:{container.host_port}/invocations"
    headers = {**row.headers, "User-Agent": PLATFORM_USER_AGENT}
    try:
        answer = _http.request("POST", url, body=body, headers=headers, timeout=timeout)
    except urllib3.exceptions.ConnectTimeoutError:  # also NewConnectionError: refused
        raise _Again(f"container {row.container_name} did not accept the connection") from None
    except urllib3.exceptions.ReadTimeoutError:
        raise _Failed(
            f"Your invocation timed out while waiting for a response from container primary "
            f"(InvocationTimeoutSeconds {row.invocation_timeout_seconds})."
        ) from None
    except urllib3.exceptions.HTTPError as error:
        raise _Failed(f"Received server error (0) from primary: {error}") from None
    if not 200 <= answer.status < 300:
        kind = "client" if answer.status < 500 else "server"
        original = answer.data.decode("utf-8", errors="replace")[:ORIGINAL_MESSAGE_LIMIT]
        raise _Failed(f'Received {kind} error ({answer.status}) from primary with message "{original}".')
    return answer.data
