"""Real botocore clients talking to the Django app in-process: requests are serialized and
signed by botocore itself, then replayed through Django's test client."""

from urllib.parse import urlsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.config import Config
from botocore.credentials import Credentials
from django.test import Client

from accounts import buckets
from accounts.accesskeys import create_access_key
from protocol import registry
from protocol.shapes import service_model

ENDPOINT_URL = "http://127.0.0.1:5005"
REGION = "eu-west-1"


class _Body:
    def __init__(self, content: bytes):
        self._content = content

    def stream(self):
        yield self._content


def replay(django_client: Client, prepared, *, raw_uri: bool = True):
    """Send a botocore prepared request through Django as a server would receive it.
    `raw_uri` supplies the request line as gunicorn does (RAW_URI)."""
    url = urlsplit(prepared.url)
    target = url.path + (f"?{url.query}" if url.query else "")
    headers = {name: _text(value) for name, value in prepared.headers.items()}
    headers.pop("Content-Length", None)
    # urllib3 adds Host on the wire: the lower-cased host, with the port when one is given.
    headers["Host"] = url.hostname + (f":{url.port}" if url.port else "")
    environ = {"CONTENT_TYPE": headers.pop("Content-Type", "")}
    if raw_uri:
        environ["RAW_URI"] = target
    return django_client.generic(
        prepared.method, target, data=prepared.body or b"", headers=headers, **environ
    )


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class DjangoTransport:
    """A `before-send` hook: the request goes to Django, Django's response back to botocore."""

    def __init__(self, *, raw_uri: bool = True):
        self.django_client = Client()
        self.raw_uri = raw_uri
        self.responses = []

    def __call__(self, request, **kwargs):
        response = replay(self.django_client, request, raw_uri=self.raw_uri)
        self.responses.append(response)
        return AWSResponse(request.url, response.status_code, dict(response.headers), _Body(response.content))


@pytest.fixture
def access_key(db):
    # The requests' S3 locations are in "bucket", which the account owns (accounts/s3_tenancy).
    buckets.claim("bucket", "210987654321")
    return create_access_key("210987654321")


@pytest.fixture
def make_client(access_key):
    """make_client(service="sagemaker", **options) -> (boto3 client, DjangoTransport)."""

    def make(
        service="sagemaker",
        *,
        endpoint_url=ENDPOINT_URL,
        secret=None,
        key_id=None,
        raw_uri=True,
        region=REGION,
        session_token=None,
        **config,
    ):
        client = boto3.client(
            service,
            endpoint_url=endpoint_url,
            region_name=region,
            aws_access_key_id=key_id or access_key.access_key_id,
            aws_secret_access_key=secret or access_key.secret_access_key,
            aws_session_token=session_token,
            config=Config(retries={"max_attempts": 1}, **config),
        )
        transport = DjangoTransport(raw_uri=raw_uri)
        client.meta.events.register("before-send", transport)
        return client, transport

    return make


@pytest.fixture
def handlers(monkeypatch):
    """An empty registry for the test: register with `registry.operation`, nothing leaks out."""
    monkeypatch.setattr(registry, "_handlers", {})
    return registry.operation


@pytest.fixture
def signed_post(access_key):
    """signed_post(target, body, content_type=...) -> Django response.
    For bodies and content types that botocore would never send."""

    def post(target: str, body: bytes, content_type: str = "application/x-amz-json-1.1"):
        prefix = target.partition(".")[0]
        service = registry.SERVICES[prefix].botocore_name if prefix in registry.SERVICES else "sagemaker"
        request = AWSRequest(
            "POST",
            ENDPOINT_URL + "/",
            headers={"X-Amz-Target": target, "Content-Type": content_type},
            data=body,
        )
        credentials = Credentials(access_key.access_key_id, access_key.secret_access_key)
        SigV4Auth(credentials, service_model(service).signing_name, REGION).add_auth(request)
        return replay(Client(), request.prepare())

    return post
