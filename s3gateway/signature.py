"""SigV4 as S3 checks it: header authentication (the payload hash a hex digest, `UNSIGNED-PAYLOAD`
or one of the aws-chunked streaming forms, whose chunks `chunked.py` verifies) and presigned URLs
(`X-Amz-Signature` in the query, valid `X-Amz-Expires` seconds).

Unlike the SageMaker API's verifier (`protocol/sigv4.py`), S3 signs the payload's hash as the
client claims it in `X-Amz-Content-SHA256`: the body is not in memory here, so the claim is
checked while the body streams (`body.py`). The canonical request is computed the way S3 does:
the path and query decoded then encoded with AWS's rules, so that any client's spelling of the
same target gives the same signature; the same functions sign the requests sent on to the store."""

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, unquote, urlsplit

from botocore.auth import HmacV1Auth
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

from protocol import sigv4
from protocol.errors import ExpiredToken, ServiceError
from s3gateway.errors import S3Error, access_denied, signature_mismatch

ALGORITHM = "AWS4-HMAC-SHA256"
TIMESTAMP = "%Y%m%dT%H%M%SZ"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
LEGACY_SIGNING_REGION = "us-east-1"  # SigV2 names no region
MAX_PRESIGNED_EXPIRES = 7 * 24 * 3600  # S3's limit: seven days
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PRESIGN_PARAMS = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
# Query parameters that authenticate a presigned URL (SigV4, then SigV2): never forwarded.
AUTH_QUERY_PARAMS = frozenset(
    (*_PRESIGN_PARAMS, "X-Amz-Expires", "X-Amz-Security-Token", "AWSAccessKeyId", "Expires", "Signature")
)
_SPACES = re.compile(r"\s+")

# (secret access key, account id) of an active key, else None; the platform key's account is "".
CredentialResolver = Callable[[str], tuple[str, str] | None]


@dataclass(frozen=True)
class S3Request:
    method: str
    raw_path: str  # as received, still percent-encoded
    query: tuple[tuple[str, str], ...]  # decoded (name, value) pairs, in the order received
    headers: Mapping[str, str]  # lower-cased names; repeated headers joined with ","


@dataclass(frozen=True)
class Caller:
    """Who signed a request, and what its body's verification needs."""

    access_key_id: str
    account_id: str  # "" for the platform key
    region: str
    payload_hash: str  # the signed claim: hex digest, UNSIGNED-PAYLOAD or a STREAMING-* form
    amz_date: str
    scope: str  # date/region/s3/aws4_request
    signing_key: bytes
    seed_signature: str  # the request's signature, which a signed chunk stream chains from

    @property
    def is_platform(self) -> bool:
        return self.account_id == ""


def authenticate(
    request: S3Request, resolve: CredentialResolver, now: datetime, max_skew: timedelta
) -> Caller:
    """Who signed the request (header or query-string SigV4), or raise the S3Error S3 answers."""
    names = {name for name, _ in request.query}
    if "X-Amz-Signature" in names:
        return _authenticate_presigned(request, resolve, now)
    if {"AWSAccessKeyId", "Signature"} <= names:
        return _authenticate_presigned_v2(request, resolve, now)
    if "authorization" not in request.headers:
        raise access_denied()  # anonymous access is refused: every bucket is private
    return _authenticate_header(request, resolve, now, max_skew)


def _authenticate_header(
    request: S3Request, resolve: CredentialResolver, now: datetime, max_skew: timedelta
) -> Caller:
    try:
        authorization = sigv4.parse_authorization(request.headers["authorization"])
    except ServiceError as error:
        raise S3Error(400, "AuthorizationHeaderMalformed", str(error)) from None
    payload_hash = request.headers.get("x-amz-content-sha256")
    if payload_hash is None:
        raise S3Error(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
    if payload_hash not in (
        UNSIGNED_PAYLOAD,
        STREAMING_SIGNED,
        STREAMING_UNSIGNED_TRAILER,
    ) and not _HEX_SHA256.match(payload_hash):
        raise S3Error(
            400,
            "InvalidArgument",
            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
            f"{STREAMING_SIGNED}, {STREAMING_UNSIGNED_TRAILER} or a valid sha256 value.",
        )
    amz_date = request.headers.get("x-amz-date", "")
    signed_at = _parse_date(amz_date)
    _check_skew(signed_at, now, max_skew)
    return _verify(
        request,
        authorization.access_key_id,
        authorization.date,
        authorization.region,
        authorization.service,
        authorization.signed_headers,
        amz_date,
        payload_hash,
        authorization.signature,
        resolve,
    )


def _authenticate_presigned(request: S3Request, resolve: CredentialResolver, now: datetime) -> Caller:
    params = dict(request.query)
    missing = [name for name in _PRESIGN_PARAMS if name not in params]
    if missing or params["X-Amz-Algorithm"] != ALGORITHM:
        raise S3Error(
            400,
            "AuthorizationQueryParametersError",
            f"Query-string authentication version 4 requires the {', '.join(_PRESIGN_PARAMS)} "
            f"and X-Amz-Expires parameters, with X-Amz-Algorithm={ALGORITHM}.",
        )
    credential = params["X-Amz-Credential"].split("/")
    if len(credential) != 5 or credential[4] != "aws4_request":
        raise S3Error(
            400,
            "AuthorizationQueryParametersError",
            "X-Amz-Credential must be <key>/<yyyymmdd>/<region>/s3/aws4_request.",
        )
    expires = params.get("X-Amz-Expires", "")
    if not expires.isdigit() or not 1 <= int(expires) <= MAX_PRESIGNED_EXPIRES:
        raise S3Error(
            400,
            "AuthorizationQueryParametersError",
            f"X-Amz-Expires must be a number of seconds from 1 to {MAX_PRESIGNED_EXPIRES}.",
        )
    signed_at = _parse_date(params["X-Amz-Date"])
    if now < signed_at - timedelta(minutes=15):
        raise S3Error(403, "AccessDenied", "Request is not valid yet")
    if now > signed_at + timedelta(seconds=int(expires)):
        raise S3Error(403, "AccessDenied", "Request has expired")
    access_key_id, date, region, service, _ = credential
    signed_headers = tuple(params["X-Amz-SignedHeaders"].split(";"))
    return _verify(
        request,
        access_key_id,
        date,
        region,
        service,
        signed_headers,
        params["X-Amz-Date"],
        UNSIGNED_PAYLOAD,
        params["X-Amz-Signature"],
        resolve,
    )


def _authenticate_presigned_v2(request: S3Request, resolve: CredentialResolver, now: datetime) -> Caller:
    """A SigV2 presigned URL (`AWSAccessKeyId`, `Expires`, `Signature`): what boto3's
    `generate_presigned_url` makes by default for an S3 client with an endpoint URL."""
    params = dict(request.query)
    expires = params.get("Expires", "")
    if not expires.isdigit():
        raise S3Error(
            403,
            "AccessDenied",
            "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
        )
    if now.timestamp() > int(expires):
        raise S3Error(403, "AccessDenied", "Request has expired")
    access_key_id = params["AWSAccessKeyId"]
    secret, account_id = _credentials(resolve, access_key_id)
    _check_session_token(request, access_key_id, secret)
    signer = _ExpiresV1Signer(Credentials(access_key_id, secret), expires)
    headers = HTTPHeaders.from_dict(dict(request.headers))
    expected = signer.get_signature(
        request.method, urlsplit(request.raw_path + _v2_subresources(request.query)), headers
    )
    if not hmac.compare_digest(expected, params["Signature"]):
        raise signature_mismatch()
    return Caller(access_key_id, account_id, LEGACY_SIGNING_REGION, UNSIGNED_PAYLOAD, "", "", b"", "")


class _ExpiresV1Signer(HmacV1Auth):
    """botocore's SigV2 signer, its date the URL's `Expires` (as in query-string authentication)."""

    def __init__(self, credentials: Credentials, expires: str):
        super().__init__(credentials)
        self._expires = expires

    def _get_date(self) -> str:
        return self._expires


def _v2_subresources(query: Sequence[tuple[str, str]]) -> str:
    kept = [(name, value) for name, value in query if name not in ("AWSAccessKeyId", "Expires", "Signature")]
    return "?" + "&".join(f"{name}={quote(value)}" if value else name for name, value in kept) if kept else ""


def _check_session_token(request, access_key_id: str, secret: str) -> None:
    """A key's own session token (in a header, or in a presigned URL's query) is accepted, any
    other refused (protocol/sigv4.session_token_for says why containers' clients send one);
    temporary credentials (STS's) are refused without theirs, as S3 refuses them."""
    tokens = [value for name, value in request.query if name.lower() == "x-amz-security-token"]
    if "x-amz-security-token" in request.headers:
        tokens.append(request.headers["x-amz-security-token"])
    for token in tokens or [None]:
        if not sigv4.session_token_accepted(token, access_key_id, secret):
            raise S3Error(400, "InvalidToken", "The provided token is malformed or otherwise invalid.")


def _credentials(resolve: CredentialResolver, access_key_id: str) -> tuple[str, str]:
    try:
        credentials = resolve(access_key_id)
    except ExpiredToken:
        raise S3Error(400, "ExpiredToken", "The provided token has expired.") from None
    if credentials is None:
        raise S3Error(
            403,
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
            AWSAccessKeyId=access_key_id,
        )
    return credentials


def _verify(
    request: S3Request,
    access_key_id: str,
    date: str,
    region: str,
    service: str,
    signed_headers: Sequence[str],
    amz_date: str,
    payload_hash: str,
    signature: str,
    resolve: CredentialResolver,
) -> Caller:
    if service != "s3":
        raise S3Error(
            400,
            "AuthorizationHeaderMalformed",
            f"The service in the credential must be 's3', not {service!r}.",
        )
    if date != amz_date[:8]:
        raise S3Error(
            400, "AuthorizationHeaderMalformed", "The date in the credential does not match X-Amz-Date."
        )
    if "host" not in signed_headers:
        raise access_denied_unsigned("host")
    unsigned = sorted(
        name for name in request.headers if name.startswith("x-amz-") and name not in signed_headers
    )
    if unsigned:
        raise access_denied_unsigned(", ".join(unsigned))
    secret, account_id = _credentials(resolve, access_key_id)
    _check_session_token(request, access_key_id, secret)
    scope = f"{date}/{region}/s3/aws4_request"
    key = signing_key(secret, date, region)
    query = [(name, value) for name, value in request.query if name != "X-Amz-Signature"]
    # The path as S3 encodes it, or as the client sent it (a client that left `+` or `!` raw).
    for uri in dict.fromkeys((canonical_path(request.raw_path), request.raw_path)):
        canonical = canonical_request(
            request.method, uri, query, request.headers, signed_headers, payload_hash
        )
        if hmac.compare_digest(sign(key, string_to_sign(amz_date, scope, canonical)), signature):
            return Caller(access_key_id, account_id, region, payload_hash, amz_date, scope, key, signature)
    raise signature_mismatch()


def access_denied_unsigned(names: str) -> S3Error:
    return S3Error(
        403, "AccessDenied", f"There were headers present in the request which were not signed: {names}"
    )


def _parse_date(amz_date: str) -> datetime:
    try:
        return datetime.strptime(amz_date, TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        raise S3Error(
            403, "AccessDenied", "AWS authentication requires a valid X-Amz-Date (yyyyMMddTHHmmssZ)."
        ) from None


def _check_skew(signed_at: datetime, now: datetime, max_skew: timedelta) -> None:
    if abs(now - signed_at) > max_skew:
        raise S3Error(
            403,
            "RequestTimeTooSkewed",
            "The difference between the request time and the current time is too large.",
            RequestTime=signed_at.strftime(TIMESTAMP),
            ServerTime=now.strftime(TIMESTAMP),
        )


# --- The canonical request, shared with the signing of forwarded requests --------------------


def uri_encode(text: str, safe: str = "-_.~") -> str:
    return quote(text, safe=safe)


def canonical_path(raw_path: str) -> str:
    """S3's canonical URI: the path decoded once, then every byte but unreserved ones and `/`
    percent-encoded (S3 neither normalises `.`/`..` nor double-encodes)."""
    return uri_encode(unquote(raw_path), safe="-_.~/")


def canonical_query(pairs: Sequence[tuple[str, str]]) -> str:
    return "&".join(
        f"{name}={value}"
        for name, value in sorted((uri_encode(name), uri_encode(value)) for name, value in pairs)
    )


def parse_query(raw_query: str) -> tuple[tuple[str, str], ...]:
    """Decoded pairs; `+` stays a plus (SigV4 clients encode a space as %20)."""
    pairs = []
    for part in raw_query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((unquote(name), unquote(value)))
    return tuple(pairs)


def canonical_request(
    method: str,
    canonical_uri: str,
    query: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
    signed_headers: Sequence[str],
    payload_hash: str,
) -> str:
    header_lines = "".join(
        f"{name}:{_SPACES.sub(' ', headers.get(name, '')).strip()}\n" for name in signed_headers
    )
    return "\n".join(
        (
            method,
            canonical_uri,
            canonical_query(query),
            header_lines,
            ";".join(signed_headers),
            payload_hash,
        )
    )


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    return "\n".join((ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()))


def signing_key(secret: str, date: str, region: str) -> bytes:
    key = ("AWS4" + secret).encode()
    for part in (date, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def sign(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def chunk_signature(caller: Caller, previous_signature: str, chunk_hash: str) -> str:
    """The signature of one aws-chunked chunk, chained from the previous one."""
    text = "\n".join(
        (
            "AWS4-HMAC-SHA256-PAYLOAD",
            caller.amz_date,
            caller.scope,
            previous_signature,
            EMPTY_SHA256,
            chunk_hash,
        )
    )
    return sign(caller.signing_key, text)
