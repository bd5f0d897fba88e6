"""The bundled store behind the gateway: requests re-signed with the platform key (its only
identity), bodies streamed through, bounded timeouts."""

import http.client
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit

from s3gateway import signature
from s3gateway.errors import S3Error

CONNECT_TIMEOUT_SECONDS = 5.0


class Upstream:
    def __init__(self, url: str, access_key_id: str, secret: str, region: str, timeout: float):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.netloc = parts.netloc
        self.access_key_id, self.secret, self.region = access_key_id, secret, region
        self.timeout = timeout  # every socket operation (a slow store fails the request, never hangs it)

    def request(
        self,
        method: str,
        raw_path: str,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: Iterable[bytes] = (),
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send the request (headers lower-cased, without auth), streaming `body`; the caller
        reads the response and closes the connection. Raises S3Error when the store is away."""
        headers = self._signed(method, raw_path, query, headers)
        target = signature.canonical_path(raw_path)
        if query:
            target += "?" + signature.canonical_query(query)
        connection = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT_SECONDS)
        try:
            connection.connect()
            connection.sock.settimeout(self.timeout)
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            for piece in body:
                connection.send(piece)
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise S3Error(503, "ServiceUnavailable", f"The storage service did not answer: {error}") from None
        except BaseException:
            connection.close()  # the body failed its check: the store sees a cut-short request
            raise

    def call(self, method: str, raw_path: str, query: Sequence[tuple[str, str]] = ()) -> tuple[int, bytes]:
        """A small request of the gateway's own (status, body)."""
        connection, response = self.request(method, raw_path, query, {"content-length": "0"})
        try:
            return response.status, response.read()
        finally:
            connection.close()

    def _signed(
        self, method: str, raw_path: str, query: Sequence[tuple[str, str]], headers: dict[str, str]
    ) -> dict[str, str]:
        now = datetime.now(UTC)
        amz_date, date = now.strftime(signature.TIMESTAMP), now.strftime("%Y%m%d")
        headers = {
            **headers,
            "host": self.netloc,
            "x-amz-date": amz_date,
            "x-amz-content-sha256": signature.UNSIGNED_PAYLOAD,
        }
        signed = sorted(name for name in headers if name == "host" or name.startswith("x-amz-"))
        scope = f"{date}/{self.region}/s3/aws4_request"
        canonical = signature.canonical_request(
            method, signature.canonical_path(raw_path), query, headers, signed, signature.UNSIGNED_PAYLOAD
        )
        key = signature.signing_key(self.secret, date, self.region)
        proof = signature.sign(key, signature.string_to_sign(amz_date, scope, canonical))
        headers["authorization"] = (
            f"{signature.ALGORITHM} Credential={self.access_key_id}/{scope}, "
            f"SignedHeaders={';'.join(signed)}, Signature={proof}"
        )
        return headers
