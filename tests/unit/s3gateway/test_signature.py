"""S3's SigV4 as the gateway checks it, against requests signed by botocore's own S3 signers."""

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from botocore.auth import HmacV1QueryAuth, S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from protocol import sigv4
from protocol.errors import ExpiredToken
from s3gateway import signature
from s3gateway.errors import S3Error

KEY_ID, SECRET, ACCOUNT = "AKIDEXAMPLE0000000000", "a-secret", "111122223333"
NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SKEW = timedelta(minutes=15)
URL = "http://127.0.0.1:8333/my-data/dir/file%20name+plus.txt?x-id=PutObject"


@pytest.fixture(autouse=True)
def signing_time(monkeypatch):
    """botocore's signers sign at NOW."""
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: NOW.replace(tzinfo=None))


def resolve(access_key_id: str):
    return (SECRET, ACCOUNT) if access_key_id == KEY_ID else None


def received(aws_request: AWSRequest) -> signature.S3Request:
    """The request as the gateway's server sees it."""
    parts = urlsplit(aws_request.url)
    headers = {name.lower(): value for name, value in aws_request.headers.items()}
    headers["host"] = parts.netloc
    return signature.S3Request(aws_request.method, parts.path, signature.parse_query(parts.query), headers)


def signed(method="PUT", url=URL, body=b"data", headers=None, secret=SECRET, payload=None) -> AWSRequest:
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    signer = S3SigV4Auth(Credentials(KEY_ID, secret), "s3", "us-east-1")
    if payload:  # the claim an SDK sends for a body it does not hash up front
        signer.payload = lambda request: payload
    signer.add_auth(request)
    return request


def authenticate(request: signature.S3Request, now=NOW) -> signature.Caller:
    return signature.authenticate(request, resolve, now, SKEW)


def error_of(request: signature.S3Request, now=NOW) -> S3Error:
    with pytest.raises(S3Error) as raised:
        authenticate(request, now)
    return raised.value


def test_a_request_signed_by_botocore_is_its_signers():
    caller = authenticate(received(signed()))

    assert (caller.access_key_id, caller.account_id, caller.region) == (KEY_ID, ACCOUNT, "us-east-1")
    assert caller.payload_hash == signature.hashlib.sha256(b"data").hexdigest()


@pytest.mark.parametrize("payload", [signature.UNSIGNED_PAYLOAD, signature.STREAMING_UNSIGNED_TRAILER])
def test_unsigned_and_streaming_payload_claims_are_accepted_as_signed(payload):
    assert authenticate(received(signed(payload=payload))).payload_hash == payload


def test_a_wrong_secret_is_signature_does_not_match():
    error = error_of(received(signed(secret="another")))

    assert (error.status, error.code) == (403, "SignatureDoesNotMatch")


def test_an_unknown_key_is_invalid_access_key_id():
    request = received(signed())
    forged = signature.S3Request(
        request.method,
        request.raw_path,
        request.query,
        {**request.headers, "authorization": request.headers["authorization"].replace(KEY_ID, "AKIDUNKNOWN")},
    )

    assert error_of(forged).code == "InvalidAccessKeyId"


def test_a_changed_path_query_or_signed_header_breaks_the_signature():
    request = received(signed(headers={"x-amz-meta-owner": "alice"}))
    for changed in (
        signature.S3Request(
            request.method, request.raw_path.replace("dir", "other"), request.query, request.headers
        ),
        signature.S3Request(request.method, request.raw_path, (("x-id", "GetObject"),), request.headers),
        signature.S3Request(
            request.method,
            request.raw_path,
            request.query,
            {**request.headers, "x-amz-meta-owner": "mallory"},
        ),
    ):
        assert error_of(changed).code == "SignatureDoesNotMatch"


def test_an_unsigned_amz_header_is_refused():
    request = received(signed())
    added = signature.S3Request(
        request.method,
        request.raw_path,
        request.query,
        {**request.headers, "x-amz-copy-source": "/other/key"},
    )

    assert (error_of(added).code, error_of(added).status) == ("AccessDenied", 403)


def test_an_old_signature_is_request_time_too_skewed():
    assert error_of(received(signed()), now=NOW + timedelta(hours=1)).code == "RequestTimeTooSkewed"


def test_a_request_without_any_signature_is_access_denied():
    request = signature.S3Request("GET", "/my-data", (), {"host": "127.0.0.1:8333"})

    assert (error_of(request).status, error_of(request).code) == (403, "AccessDenied")


def presigned_v4(url: str, expires: int, secret=SECRET) -> signature.S3Request:
    request = AWSRequest(method="GET", url=url)
    signer = S3SigV4QueryAuth(Credentials(KEY_ID, secret), "s3", "us-east-1", expires=expires)
    signer.add_auth(request)
    return received(request)


def test_a_presigned_v4_url_is_valid_until_it_expires():
    request = presigned_v4("http://127.0.0.1:8333/my-data/report.csv", expires=60)

    assert authenticate(request, now=NOW + timedelta(seconds=59)).account_id == ACCOUNT
    expired = error_of(request, now=NOW + timedelta(seconds=61))
    assert (expired.status, expired.code, expired.message) == (403, "AccessDenied", "Request has expired")
    assert (
        error_of(presigned_v4("http://127.0.0.1:8333/my-data/report.csv", 60, "x")).code
        == "SignatureDoesNotMatch"
    )


def test_a_presigned_v2_url_is_valid_until_it_expires():
    request = AWSRequest(method="GET", url="http://127.0.0.1:8333/my-data/report.csv")
    HmacV1QueryAuth(Credentials(KEY_ID, SECRET), expires=60).add_auth(request)
    received_request = received(request)
    expires = int(dict(received_request.query)["Expires"])
    signed_at = datetime.fromtimestamp(expires - 60, UTC)

    assert authenticate(received_request, now=signed_at).account_id == ACCOUNT
    assert error_of(received_request, now=signed_at + timedelta(seconds=61)).message == "Request has expired"


def test_the_platform_key_is_the_platform():
    caller = signature.authenticate(received(signed()), lambda key: (SECRET, ""), NOW, SKEW)

    assert caller.is_platform


def test_a_keys_own_session_token_is_accepted_and_any_other_is_invalid_token():
    """What a container's SDK sends with the credentials endpoint's key and Token (in a header, or
    in a presigned URL's query); the store never sees it (pipeline's _NOT_FORWARDED)."""
    own, other = sigv4.session_token_for(SECRET), sigv4.session_token_for("another")

    def with_token(token: str, presign: bool) -> signature.S3Request:
        request = AWSRequest(method="GET", url="http://127.0.0.1:8333/my-data/report.csv")
        credentials = Credentials(KEY_ID, SECRET, token)
        if presign:
            S3SigV4QueryAuth(credentials, "s3", "us-east-1", expires=60).add_auth(request)
        else:
            S3SigV4Auth(credentials, "s3", "us-east-1").add_auth(request)
        return received(request)

    for presign in (False, True):
        assert authenticate(with_token(own, presign)).account_id == ACCOUNT
        refused = error_of(with_token(other, presign))
        assert (refused.status, refused.code) == (400, "InvalidToken")


def test_temporary_credentials_without_their_session_token_are_refused():
    """STS's credentials (`ASIA…`, identity/sts.py) are valid only with their token, as on S3; a
    presigned URL carries it in its query."""
    temporary = "ASIA" + KEY_ID[4:]

    def request_by(token: str | None, presign: bool) -> signature.S3Request:
        request = AWSRequest(method="GET", url="http://127.0.0.1:8333/my-data/report.csv")
        credentials = Credentials(temporary, SECRET, token)
        if presign:
            S3SigV4QueryAuth(credentials, "s3", "us-east-1", expires=60).add_auth(request)
        else:
            S3SigV4Auth(credentials, "s3", "us-east-1").add_auth(request)
        return received(request)

    def resolve_temporary(access_key_id: str):
        return (SECRET, ACCOUNT) if access_key_id == temporary else None

    for presign in (False, True):
        accepted = signature.authenticate(
            request_by(sigv4.session_token_for(SECRET), presign), resolve_temporary, NOW, SKEW
        )
        assert accepted.account_id == ACCOUNT
        with pytest.raises(S3Error) as refused:
            signature.authenticate(request_by(None, presign), resolve_temporary, NOW, SKEW)
        assert (refused.value.status, refused.value.code) == (400, "InvalidToken")


def test_expired_temporary_credentials_are_expired_token():
    """S3's answer for STS credentials past their expiry: 400 ExpiredToken."""

    def expired(access_key_id: str):
        raise ExpiredToken("The security token included in the request is expired")

    with pytest.raises(S3Error) as refused:
        signature.authenticate(received(signed()), expired, NOW, SKEW)

    assert (refused.value.status, refused.value.code) == (400, "ExpiredToken")
