"""Our canonical request and signature against botocore's, for request shapes generated
systematically: paths, query strings, headers and bodies signed by botocore's SigV4 signer, then
verified as a server receives them (the raw target and the headers off the wire)."""

from datetime import UTC, datetime, timedelta
from hashlib import sha256
from unittest import mock

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from protocol import sigv4
from protocol.errors import IncompleteSignature

SIGNED_AT = datetime(2024, 1, 15, 12, 0, 0)
AMZ_DATE = "20240115T120000Z"
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
HOST = "127.0.0.1:5005"

# Request targets as a client puts them on the wire (already percent-encoded), and a few raw
# unicode/space forms to hold the canonicalisation itself to botocore's.
PATHS = [
    "",
    "/",
    "/endpoints/my-endpoint/invocations",
    "/trailing/",
    "/%20space/a%20b",
    "/caf%C3%A9/%E6%97%A5",
    "/a b",
    "/café/日本",
    "/~user/a~b",
    "/%7Euser",
    "/a%2Fb",
    "/a%2fb",
    "/a%252Fb",
    "//",
    "//a//b//",
    "/./a/./b/.",
    "/a/../b",
    "/../../a",
    "/a/b/..",
    "/a/b/../",
    "/.hidden/..x/...",
    "/a+b",
    "/a;b=c,d:e@f!$&'()*",
]
QUERIES = [
    "",
    "a=1",
    "b=2&a=1",
    "a=2&a=1&a=10",
    "a=&b",
    "flag",
    "a=1&flag&b=",
    "x=%2F%20%2B",
    "x=/+:@",
    "x=a+b",
    "x=%7E~",
    "k%20ey=v",
    "&",
    "a=b=c",
    "z=%C3%A9&y=1",
]
HEADERS = [
    {},
    {"X-Custom": "lead and trail"},
    {"X-Custom": "multiple    inner   spaces"},
    {"X-Custom": "tabs\t\tinside"},
    {"X-Empty": ""},
    {"X-Amzn-SageMaker-Custom-Attributes": "a=1,  b=2", "Accept": "application/json"},
    {"MiXeD-CaSe": "Value", "x-lower": "v", "X-UPPER": "V"},
    {"Content-Type": "application/json", "X-Amz-Target": "SageMaker.DescribeTrainingJob"},
]
BODIES = [b"", b"{}", bytes(range(256)) * 4]


def _botocore_signed(
    method: str, target: str, headers: dict[str, str], body: bytes, signer_class=SigV4Auth
) -> tuple[sigv4.SignedRequest, str]:
    """(the request as the server receives it, botocore's canonical request) for a request
    botocore signs at SIGNED_AT."""
    aws_request = AWSRequest(method=method, url=f"http://{HOST}{target}", headers=headers, data=body)
    signer = signer_class(Credentials(KEY_ID, SECRET), "sagemaker", "eu-west-1")
    with (
        mock.patch("botocore.auth.get_current_datetime", return_value=SIGNED_AT),
        mock.patch.object(signer, "string_to_sign", wraps=signer.string_to_sign) as string_to_sign,
    ):
        signer.add_auth(aws_request)
    (_, signed_canonical), _ = string_to_sign.call_args
    # HTTP parsers strip a value's surrounding whitespace; urllib3 adds Host.
    received = {name.lower(): _text(value).strip(" \t") for name, value in aws_request.headers.items()}
    received["host"] = HOST
    return sigv4.SignedRequest(method, target, received, body), signed_canonical


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _verify(request: sigv4.SignedRequest, **overrides):
    options = dict(
        signing_name="sagemaker",
        resolve=lambda key_id: (SECRET, "123456789012") if key_id == KEY_ID else None,
        now=SIGNED_AT.replace(tzinfo=UTC),
        max_skew=timedelta(minutes=15),
    )
    return sigv4.verify(request, **{**options, **overrides})


def _assert_same_as_botocore(request: sigv4.SignedRequest, expected_canonical: str) -> None:
    authorization = sigv4.parse_authorization(request.headers["authorization"])
    assert sigv4.canonical_request(request, authorization) == expected_canonical
    assert sigv4.compute_signature(request, authorization, AMZ_DATE, SECRET) == authorization.signature
    assert _verify(request).account_id == "123456789012"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_paths_and_queries_canonicalise_as_botocore_signs_them(path, method):
    for query in QUERIES:
        target = path + (f"?{query}" if query else "")
        request, expected = _botocore_signed(method, target, {}, b"")
        _assert_same_as_botocore(request, expected)


@pytest.mark.parametrize("headers", HEADERS)
@pytest.mark.parametrize("body", BODIES, ids=["empty", "json", "binary"])
def test_headers_and_bodies_canonicalise_as_botocore_signs_them(headers, body):
    request, expected = _botocore_signed("POST", "/endpoints/e/invocations", headers, body)
    _assert_same_as_botocore(request, expected)


def test_a_signed_payload_hash_header_is_the_hash_signed():
    body = b'{"TrainingJobName": "j"}'
    headers = {"X-Amz-Content-SHA256": sha256(body).hexdigest()}
    request, expected = _botocore_signed("POST", "/", headers, body)
    _assert_same_as_botocore(request, expected)


class _SignsEverything(SigV4Auth):
    """Another SDK's choice: it signs headers botocore leaves out (User-Agent, Expect)."""

    def headers_to_sign(self, request):
        signed = super().headers_to_sign(request)
        for name, value in request.headers.items():
            if name not in signed:
                signed[name.lower()] = value
        return signed


def test_headers_botocore_would_not_sign_are_verified_when_the_client_signed_them():
    headers = {"User-Agent": "other-sdk/1.0  (linux)", "Expect": "100-continue"}
    request, expected = _botocore_signed("POST", "/a?b=1", headers, b"x", signer_class=_SignsEverything)
    assert "user-agent" in request.headers["authorization"]
    _assert_same_as_botocore(request, expected)


def test_an_absolute_form_target_is_canonicalised_by_its_path_and_query():
    request, expected = _botocore_signed("GET", "/a/./b?y=2&x=1", {}, b"")
    absolute = sigv4.SignedRequest("GET", f"http://{HOST}/a/./b?y=2&x=1", request.headers, b"")
    _assert_same_as_botocore(absolute, expected)


def test_a_tampered_target_no_longer_verifies():
    request, _ = _botocore_signed("GET", "/a/b?x=1", {}, b"")
    for target in ("/a/c?x=1", "/a/b?x=2", "/a/b?x=1&y", "/a/b/?x=1"):
        tampered = sigv4.SignedRequest("GET", target, request.headers, b"")
        with pytest.raises(sigv4.InvalidSignature):
            _verify(tampered)


def _with_date_headers(**headers: str) -> sigv4.SignedRequest:
    signed = ";".join(sorted(["host", *headers]))
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={KEY_ID}/20240115/eu-west-1/sagemaker/aws4_request, "
        f"SignedHeaders={signed}, Signature={'0' * 64}"
    )
    return sigv4.SignedRequest("POST", "/", {"host": HOST, "authorization": authorization, **headers}, b"")


@pytest.mark.parametrize(
    "amz_date",
    [
        "2024-01-15T12:00:00Z",
        "20240115T120000",
        "20240115 120000Z",
        "20241315T120000Z",
        "20240230T120000Z",
        "20240115T246000Z",
        "20240115T120060Z",
        "00000115T120000Z",
        "20240115T120000Z ",
        "２０２４0115T120000Z",
    ],
)
def test_a_malformed_amz_date_is_refused_with_incomplete_signature(amz_date):
    with pytest.raises(IncompleteSignature) as refused:
        _verify(_with_date_headers(**{"x-amz-date": amz_date}))
    assert refused.value.message == f"X-Amz-Date must be in the form yyyyMMddTHHmmssZ, got {amz_date!r}."


def test_a_date_header_past_the_last_representable_instant_is_refused_not_a_crash():
    # 9999-12-31 23:30 at -01:00 is year 10000 in UTC: used to escape as an OverflowError (a 500).
    date = "Fri, 31 Dec 9999 23:30:00 -0100"
    with pytest.raises(IncompleteSignature) as refused:
        _verify(_with_date_headers(date=date))
    assert refused.value.message == f"Date header is not an HTTP date: {date!r}."
