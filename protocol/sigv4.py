"""AWS Signature Version 4 verification.

The signature is recomputed over the raw request target and body as they came off the wire and
exactly the headers the client signed, by a canonical-request builder of our own that applies
SigV4's rules as botocore's signer does for every service but S3 (path normalised and encoded
again, query pairs sorted, header values trimmed; tests/unit/protocol/test_sigv4_canonical.py
holds it to botocore's byte for byte): botocore's signer rebuilt a request object per call and
cost twice the whole check.

Enforced as AWS does, so that a captured request cannot be re-aimed or re-filled: `host`,
`content-type` and every `x-amz-*` header present (X-Amz-Target, X-Amz-Date, ...) must be
signed, plus whatever headers the caller acts on; the payload hash in the canonical request is
always the body's own, so an `X-Amz-Content-SHA256` header must equal it (`UNSIGNED-PAYLOAD`
is refused); the scope's region must look like a region."""

import base64
import functools
import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from hashlib import sha256
from urllib.parse import quote, urlsplit

from botocore.auth import SIGV4_TIMESTAMP, STREAMING_UNSIGNED_PAYLOAD_TRAILER, UNSIGNED_PAYLOAD

from protocol.context import RequestContext
from protocol.errors import (
    IncompleteSignature,
    InvalidSignature,
    MissingAuthenticationToken,
    UnrecognizedClient,
)
from protocol.limits import echo

# Returns (secret access key, account id) for an active access key id, else None; may raise
# ExpiredToken for temporary credentials past their expiry.
CredentialResolver = Callable[[str], tuple[str, str] | None]

_ALGORITHM = "AWS4-HMAC-SHA256"
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<access_key_id>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)"
    r"/(?P<service>[^/]+)/aws4_request,\s*SignedHeaders=(?P<signed_headers>[a-z0-9;\-]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
_PARTS = ("Credential", "SignedHeaders", "Signature")
_AMZ_DATE = re.compile(r"\d{8}T\d{6}Z", re.ASCII)
# Headers that must be signed whenever the request carries them (besides `host`, always).
_MUST_SIGN_PREFIX = "x-amz-"
_MUST_SIGN = ("content-type",)
# A region name as every AWS partition spells one (botocore's partitions.json regionRegex, merged).
_REGION = re.compile(r"^[a-z]{2,4}(?:-[a-z]+)+-\d{1,2}$")
_INVALID_TOKEN = "The security token included in the request is invalid."
# AWS's prefix of temporary credentials' key ids (STS's): they are refused without their token.
TEMPORARY_KEY_PREFIX = "ASIA"
_SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)


@dataclass(frozen=True)
class SignedRequest:
    """The parts of an HTTP request that SigV4 covers, exactly as received."""

    method: str
    raw_target: str  # request-line target: the undecoded path, then `?query` if any
    headers: Mapping[str, str]  # lower-cased names
    body: bytes


@dataclass(frozen=True)
class Authorization:
    access_key_id: str
    date: str  # yyyymmdd, from the credential scope
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str


def verify(
    request: SignedRequest,
    *,
    signing_name: str,
    resolve: CredentialResolver,
    now: datetime,
    max_skew: timedelta,
    must_sign: Iterable[str] = (),
) -> RequestContext:
    """Check the request's signature; return who signed it, or raise a 403 ServiceError.
    `must_sign`: further (lower-case) header names the caller acts on, refused unless signed."""
    authorization = parse_authorization(request.headers.get("authorization"))
    _check_signed_headers(request.headers, authorization.signed_headers, must_sign)
    amz_date, signed_at = _request_timestamp(request.headers)
    _check_scope(authorization, amz_date, signing_name)
    credentials = resolve(authorization.access_key_id)
    if credentials is None:
        raise UnrecognizedClient(_INVALID_TOKEN)
    secret, account_id = credentials
    check_session_token(request.headers.get("x-amz-security-token"), authorization.access_key_id, secret)
    _check_skew(amz_date, signed_at, now, max_skew)
    _check_payload_hash(request)
    expected = compute_signature(request, authorization, amz_date, secret)
    if not hmac.compare_digest(expected, authorization.signature):
        raise InvalidSignature(_SIGNATURE_MISMATCH)
    return RequestContext(account_id, authorization.region, authorization.access_key_id)


def parse_authorization(header: str | None) -> Authorization:
    if not header:
        raise MissingAuthenticationToken("Missing Authentication Token")
    match = _AUTHORIZATION.match(header)
    if match is None:
        raise IncompleteSignature(_describe_malformed(header))
    parts = match.groupdict()
    signed_headers = tuple(parts.pop("signed_headers").split(";"))
    if "host" not in signed_headers:
        raise IncompleteSignature("'Host' must be a 'SignedHeader' in the AWS Authorization.")
    return Authorization(signed_headers=signed_headers, **parts)


def session_token_for(secret: str) -> str:
    """The session token of a key: what the credentials endpoint hands containers beside the key
    (accounts/container_credentials.py). Clients built on the AWS CRT (s3torchconnector,
    Mountpoint) refuse credentials from a container endpoint without one, and botocore then
    sends it with every request. Derived from the secret, so it proves nothing a signature does
    not already prove, and a key's token is the same wherever it is checked (API, S3 gateway)."""
    digest = hmac.new(secret.encode(), b"sageport session token v1", sha256).digest()
    return base64.b64encode(digest + hmac.new(digest, b"2", sha256).digest()).decode()


def check_session_token(token: str | None, access_key_id: str, secret: str) -> None:
    """A request may carry its key's session token (`session_token_for`); any other token is
    refused, as AWS refuses a forged one. Only temporary credentials (STS's, `ASIA…`) need it,
    as on AWS, where their token is what makes them valid."""
    if not session_token_accepted(token, access_key_id, secret):
        raise UnrecognizedClient(_INVALID_TOKEN)


def session_token_accepted(token: str | None, access_key_id: str, secret: str) -> bool:
    """`check_session_token`'s rule, for the servers that answer in their own words (S3)."""
    if token is None:
        return not access_key_id.startswith(TEMPORARY_KEY_PREFIX)
    return hmac.compare_digest(token.encode(), session_token_for(secret).encode())


def _check_signed_headers(
    headers: Mapping[str, str], signed: tuple[str, ...], must_sign: Iterable[str]
) -> None:
    """An unsigned header that changes the request's meaning (the operation in X-Amz-Target, a
    header forwarded to a model) would let anyone who saw one signed request send another."""
    present = [name for name, value in headers.items() if value]
    required = {name for name in present if name.startswith(_MUST_SIGN_PREFIX) or name in _MUST_SIGN}
    required.update(name for name in must_sign if headers.get(name))
    if not headers.get("x-amz-date") and headers.get("date"):
        required.add("date")  # the signing time: unsigned, a captured request would never expire
    unsigned = sorted(required.difference(signed))
    if unsigned:
        names = ", ".join(f"'{echo(name)}'" for name in unsigned)
        raise IncompleteSignature(
            f"Headers {names} must be listed in SignedHeaders: the signature must cover every header "
            "the service acts on (content-type, x-amz-*, the date, and the headers passed to a model)."
        )


def _check_payload_hash(request: SignedRequest) -> None:
    """botocore's signer takes a (signed) X-Amz-Content-SHA256 as the payload's hash instead of
    hashing the body: unless it is the body's own hash, any body could be sent under it."""
    claimed = request.headers.get("x-amz-content-sha256")
    if claimed is None:
        return
    if claimed in (UNSIGNED_PAYLOAD, STREAMING_UNSIGNED_PAYLOAD_TRAILER):
        raise InvalidSignature(
            f"{claimed} is not accepted by this service: sign the payload (botocore does by default)."
        )
    if not hmac.compare_digest(claimed.encode(), sha256(request.body).hexdigest().encode()):
        raise InvalidSignature("The provided 'x-amz-content-sha256' header does not match what was computed.")


def _describe_malformed(header: str) -> str:
    if not header.startswith(_ALGORITHM + " "):
        return f"Only {_ALGORITHM} header authorization is supported. Authorization={echo(header)}"
    missing = [part for part in _PARTS if f"{part}=" not in header]
    if missing:
        return " ".join(f"Authorization header requires '{part}' parameter." for part in missing)
    return (
        "Authorization header is malformed: expected 'Credential=<key>/<yyyymmdd>/<region>/<service>"
        "/aws4_request, SignedHeaders=<names>, Signature=<64 hex digits>'."
    )


def _request_timestamp(headers: Mapping[str, str]) -> tuple[str, datetime]:
    """The signing time as `yyyymmddThhmmssZ` and as an aware datetime: X-Amz-Date, else the Date
    header (as botocore)."""
    if headers.get("x-amz-date"):
        amz_date = headers["x-amz-date"]
        try:
            return amz_date, _parse_amz_date(amz_date)
        except ValueError:
            raise IncompleteSignature(
                f"X-Amz-Date must be in the form yyyyMMddTHHmmssZ, got {echo(amz_date)!r}."
            ) from None
    if headers.get("date"):
        try:
            signed_at = parsedate_to_datetime(headers["date"]).astimezone(UTC).replace(microsecond=0)
        except (TypeError, ValueError, OverflowError):
            date = echo(headers["date"])
            raise IncompleteSignature(f"Date header is not an HTTP date: {date!r}.") from None
        return _stamp(signed_at), signed_at
    raise IncompleteSignature(
        "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
    )


def _parse_amz_date(amz_date: str) -> datetime:
    """`yyyymmddThhmmssZ` exactly (slices, not strptime: a noticeable share of a small request);
    ValueError for any other form or an impossible date."""
    if _AMZ_DATE.fullmatch(amz_date) is None:
        raise ValueError(amz_date)
    year, month, day = int(amz_date[:4]), int(amz_date[4:6]), int(amz_date[6:8])
    hour, minute, second = int(amz_date[9:11]), int(amz_date[11:13]), int(amz_date[13:15])
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _check_scope(authorization: Authorization, amz_date: str, signing_name: str) -> None:
    if authorization.service != signing_name:
        raise InvalidSignature(f"Credential should be scoped to correct service: '{signing_name}'.")
    if not _REGION.match(authorization.region):
        raise InvalidSignature(
            f"Credential should be scoped to a valid region, not '{echo(authorization.region)}'."
        )
    if authorization.date != amz_date[:8]:
        raise InvalidSignature(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{authorization.date}' != '{amz_date[:8]}', from '{amz_date}'."
        )


def _check_skew(amz_date: str, signed_at: datetime, now: datetime, max_skew: timedelta) -> None:
    minutes = f"{max_skew.total_seconds() / 60:g} min."
    if signed_at < now - max_skew:
        raise InvalidSignature(
            f"Signature expired: {amz_date} is now earlier than {_stamp(now - max_skew)} "
            f"({_stamp(now)} - {minutes})"
        )
    if signed_at > now + max_skew:
        raise InvalidSignature(
            f"Signature not yet current: {amz_date} is still later than {_stamp(now + max_skew)} "
            f"({_stamp(now)} + {minutes})"
        )


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(SIGV4_TIMESTAMP)


def compute_signature(
    request: SignedRequest, authorization: Authorization, amz_date: str, secret: str
) -> str:
    scope = f"{amz_date[:8]}/{authorization.region}/{authorization.service}/aws4_request"
    digest = sha256(canonical_request(request, authorization).encode()).hexdigest()
    string_to_sign = f"{_ALGORITHM}\n{amz_date}\n{scope}\n{digest}"
    key = _signing_key(secret, amz_date[:8], authorization.region, authorization.service)
    return hmac.new(key, string_to_sign.encode(), sha256).hexdigest()


def canonical_request(request: SignedRequest, authorization: Authorization) -> str:
    """The canonical request the client signed, built by SigV4's rules as botocore applies them to
    every service but S3 (tests/unit/protocol/test_sigv4_canonical.py holds them to botocore's)."""
    path, query = _split_target(request.raw_target)
    names = sorted(set(authorization.signed_headers))
    headers = request.headers
    # Each value trimmed, inner runs of whitespace collapsed to one space ("Trimall").
    canonical_headers = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in names)
    # botocore takes a signed X-Amz-Content-SHA256 as the payload hash (`verify` has checked that
    # it is the body's own).
    if "x-amz-content-sha256" in names:
        payload_hash = headers.get("x-amz-content-sha256", "")
    else:
        payload_hash = sha256(request.body).hexdigest()
    return "\n".join(
        (
            request.method.upper(),
            _canonical_path(path),
            _canonical_query(query),
            canonical_headers,
            ";".join(names),
            payload_hash,
        )
    )


def _split_target(raw_target: str) -> tuple[str, str]:
    """(path, query) of a request target, as `urlsplit` sees them: a proxy may send the absolute
    form; a fragment is not part of either; tabs and line breaks are dropped (no HTTP parser lets
    them through, but the old urlsplit-based signer did the same)."""
    if not raw_target.startswith("/"):
        parts = urlsplit(raw_target)
        return parts.path, parts.query
    if "\t" in raw_target or "\r" in raw_target or "\n" in raw_target:
        raw_target = raw_target.replace("\t", "").replace("\r", "").replace("\n", "")
    path, _, query = raw_target.partition("#")[0].partition("?")
    return path, query


def _canonical_path(path: str) -> str:
    """The received (already percent-encoded) path, with empty, `.` and `..` segments resolved
    (RFC 3986 5.2.4; AWS also drops empty segments, keeping a trailing slash), then encoded once
    more: every SDK but S3's signs the encoding of the path it sends."""
    if "//" in path or "/." in path or not path.startswith("/"):
        path = _remove_dot_segments(path)
    return quote(path, safe="/~")


def _remove_dot_segments(path: str) -> str:
    if not path:
        return "/"
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    leading = "/" if path.startswith("/") else ""
    trailing = "/" if path.endswith("/") and segments else ""
    return leading + "/".join(segments) + trailing


def _canonical_query(query: str) -> str:
    """`key=value` pairs as received (already encoded), sorted by key then value; a key without `=`
    gets an empty value."""
    if not query:
        return ""
    pairs = sorted(pair.partition("=")[::2] for pair in query.split("&"))
    return "&".join(f"{key}={value}" for key, value in pairs)


@functools.lru_cache(maxsize=1024)
def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    """The key derived for each signature (four HMACs, ~10 µs), remembered: a client signs with the
    same secret, date, region and service all day."""
    key = hmac.new(f"AWS4{secret}".encode(), date.encode(), sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), sha256).digest()
    return key


def requote_path(decoded_path: str) -> str:
    """Rebuild a raw path from a decoded one, encoding as botocore's serializer does.
    Only for servers that do not expose the request line (e.g. Django's test client)."""
    return quote(decoded_path, safe="/~")
