"""One S3 request through the gateway: authenticate, authorise, translate, forward, reflect."""

import itertools
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.client import HTTPResponse
from typing import Protocol
from urllib.parse import quote

from accounts import buckets
from s3gateway import body, ownership, signature, sse
from s3gateway.errors import S3Error, access_denied, no_such_bucket
from s3gateway.ownership import Operation
from s3gateway.upstream import Upstream

S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
MAX_BUFFERED_RESPONSE_BYTES = 32 * 1024 * 1024  # the small XML answers the gateway rewrites
# Request headers that concern this hop or the client's signature, never the store.
_NOT_FORWARDED = {
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "host",
    "authorization",
    "content-length",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    "x-amz-security-token",  # the client's key's, checked here; the store gets the platform key's request
}
ElementTree.register_namespace("", S3_NAMESPACE)


class ClientConnection(Protocol):
    def continue_body(self) -> body.BoundedReader: ...


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: Iterable[bytes]
    account: str
    close: Callable[[], None] = field(default=lambda: None)
    caller: str = ""  # who signed the request: an account id, or "platform" (for the access log)


class Pipeline:
    def __init__(
        self,
        upstream: Upstream,
        resolve: signature.CredentialResolver,
        now: Callable[[], datetime],
        max_skew: timedelta,
        multipart: sse.MultipartKeys,
        scope_regions: signature.Regions = signature.AWS_REGIONS,
    ):
        self.upstream, self.resolve, self.now, self.max_skew = upstream, resolve, now, max_skew
        self.multipart = multipart
        self.scope_regions = scope_regions
        # One CreateBucket at a time. SeaweedFS gives every bucket a collection of volumes of its
        # own, and its master stopped answering for good (every write and bucket call timed out
        # until it was restarted) when buckets were created on several threads after others were
        # deleted: SeaweedFS 4.48, 120 creations on 12 threads after 120 deletions, in a store
        # holding 900 buckets (the test suite's store after its end-to-end tests). Creations one at
        # a time never did; they are rare enough that waiting in turn costs nothing that matters.
        self._creating = threading.Lock()

    def handle(self, request: signature.S3Request, client: ClientConnection, request_id: str) -> Response:
        caller = signature.authenticate(request, self.resolve, self.now(), self.max_skew, self.scope_regions)
        response = self._handle(request, caller, client)
        response.caller = caller.account_id or "platform"
        return response

    def _handle(
        self, request: signature.S3Request, caller: signature.Caller, client: ClientConnection
    ) -> Response:
        target = ownership.target_of(request.raw_path, request.headers)
        operation = ownership.operation_of(request.method, target, request.query)
        if operation is Operation.LIST_BUCKETS:
            return self._list_buckets(request, caller, client)
        if operation is Operation.CREATE_BUCKET:
            with self._creating:
                if not caller.is_platform:
                    return self._create_bucket(request, caller, target.bucket, client)
                return self._use_bucket(request, caller, client, target, operation)
        return self._use_bucket(request, caller, client, target, operation)

    def _use_bucket(
        self, request: signature.S3Request, caller: signature.Caller, client: ClientConnection,
        target: ownership.Target, operation: Operation,
    ) -> Response:
        owner = self._authorize(caller, target.bucket)
        if target.copy_source_bucket is not None:
            self._authorize(caller, target.copy_source_bucket)
        response = self._forward(request, caller, client, owner or caller.account_id)
        if operation is Operation.DELETE_BUCKET and response.status == 204:
            buckets.release(target.bucket)
        return response

    # --- access ---

    def _authorize(self, caller: signature.Caller, bucket: str) -> str | None:
        """The bucket's owner, once `caller` may use it."""
        owner = buckets.owner_of(bucket)
        if ownership.may_use(caller.account_id, owner):
            return owner
        if owner is None and not self._exists(bucket):
            raise no_such_bucket(bucket)
        raise access_denied()

    def _exists(self, bucket: str) -> bool:
        status, _ = self.upstream.call("HEAD", "/" + quote(bucket))
        return status != 404

    def _create_bucket(
        self, request: signature.S3Request, caller: signature.Caller, bucket: str, client: ClientConnection
    ) -> Response:
        account = caller.account_id
        owner = buckets.owner_of(bucket)
        refusal = ownership.refuse_create(account, owner, caller.region)
        if refusal:
            raise refusal
        if owner == account:  # us-east-1: re-creating one's own bucket succeeds
            return Response(200, [("Location", f"/{bucket}"), ("Content-Length", "0")], (), account)
        if not buckets.claim(bucket, account):
            raise (
                ownership.refuse_create(account, buckets.owner_of(bucket), caller.region)
                or ownership.bucket_already_exists()
            )
        try:
            response = self._forward(request, caller, client, account)
        except BaseException:
            buckets.release(bucket)
            raise
        if response.status != 200:
            buckets.release(bucket)
            if response.status == 409:  # the store has it: a platform bucket
                response.close()
                raise ownership.bucket_already_exists()
        return response

    def _list_buckets(
        self, request: signature.S3Request, caller: signature.Caller, client: ClientConnection
    ) -> Response:
        response = self._forward(request, caller, client, caller.account_id)
        if caller.is_platform or response.status != 200:
            return response
        content = _owned_buckets_only(_read_all(response), buckets.owned_by(caller.account_id))
        return _replace_body(response, content)

    # --- forwarding ---

    def _forward(
        self,
        request: signature.S3Request,
        caller: signature.Caller,
        client: ClientConnection,
        account_id: str,
    ) -> Response:
        headers = {name: value for name, value in request.headers.items() if name not in _NOT_FORWARDED}
        arn = sse.translate_request(headers, caller.region, account_id)
        query = [(name, value) for name, value in request.query if name not in signature.AUTH_QUERY_PARAMS]
        arn = self._multipart_key(request, query, arn)
        pieces = self._body(request, caller, client, headers)
        connection, upstream_response = self.upstream.request(
            request.method, request.raw_path, query, headers, pieces
        )
        response = Response(
            upstream_response.status,
            sse.reflect_response(upstream_response.getheaders(), arn),
            _stream(upstream_response),
            caller.account_id,
            connection.close,
        )
        if request.method == "POST" and "uploads" in dict(query) and arn and response.status == 200:
            content = _read_all(response)
            upload_id = _xml_text(content, "UploadId")
            if upload_id:
                self.multipart.remember(upload_id, arn)
            response = _replace_body(response, content)
        return response

    def _multipart_key(
        self, request: signature.S3Request, query: list[tuple[str, str]], arn: str | None
    ) -> str | None:
        upload_id = dict(query).get("uploadId")
        if upload_id is None:
            return arn
        found = self.multipart.get(upload_id)
        if request.method in ("DELETE", "POST"):  # aborted or completed
            self.multipart.forget(upload_id)
        return arn or found

    def _body(
        self,
        request: signature.S3Request,
        caller: signature.Caller,
        client: ClientConnection,
        headers: dict[str, str],
    ) -> Iterator[bytes]:
        has_body = "content-length" in request.headers or "transfer-encoding" in request.headers
        if not has_body:
            return iter(())
        reader = client.continue_body()
        if caller.payload_hash in (signature.STREAMING_SIGNED, signature.STREAMING_UNSIGNED_TRAILER):
            decoded = request.headers.get("x-amz-decoded-content-length", "")
            if not decoded.isdigit():
                raise S3Error(
                    411, "MissingContentLength", "aws-chunked uploads need x-amz-decoded-content-length."
                )
            trailer = (
                request.headers.get("x-amz-trailer")
                if caller.payload_hash == signature.STREAMING_UNSIGNED_TRAILER
                else None
            )
            pieces = body.aws_chunked(reader, caller, int(decoded), trailer)
            headers["content-length"] = decoded
            encodings = [
                e.strip()
                for e in headers.pop("content-encoding", "").split(",")
                if e.strip() and e.strip() != "aws-chunked"
            ]
            if encodings:
                headers["content-encoding"] = ", ".join(encodings)
        else:
            claimed = None if caller.payload_hash == signature.UNSIGNED_PAYLOAD else caller.payload_hash
            pieces = body.plain(reader, claimed)
            headers["content-length"] = str(reader.remaining)
        return _primed(body.held_back(pieces))


def _primed(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Take the first piece now: an empty or one-piece body is fully checked before the store is
    contacted (afterwards, a failed check cuts the forwarded request short)."""
    first = next(pieces, None)
    return itertools.chain([first] if first is not None else [], pieces)


def _stream(response: HTTPResponse) -> Iterator[bytes]:
    while data := response.read(body.BLOCK_BYTES):
        yield data


def _read_all(response: Response) -> bytes:
    parts, size = [], 0
    try:
        for piece in response.body:
            size += len(piece)
            if size > MAX_BUFFERED_RESPONSE_BYTES:
                raise S3Error(500, "InternalError", "The storage service's answer is too large.")
            parts.append(piece)
    finally:
        response.close()
    return b"".join(parts)


def _replace_body(response: Response, content: bytes) -> Response:
    headers = [(name, value) for name, value in response.headers if name.lower() != "content-length"]
    return Response(
        response.status, headers + [("Content-Length", str(len(content)))], [content], response.account
    )


def _xml_text(content: bytes, tag: str) -> str | None:
    try:
        element = ElementTree.fromstring(content).find(f"{{{S3_NAMESPACE}}}{tag}")
    except ElementTree.ParseError:
        return None
    return element.text if element is not None else None


def _owned_buckets_only(content: bytes, owned: set[str]) -> bytes:
    """A ListBuckets answer with only the buckets in `owned`."""
    root = ElementTree.fromstring(content)
    listing = root.find(f"{{{S3_NAMESPACE}}}Buckets")
    if listing is not None:
        for bucket in list(listing):
            if bucket.findtext(f"{{{S3_NAMESPACE}}}Name") not in owned:
                listing.remove(bucket)
    return ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8")
