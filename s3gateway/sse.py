"""SSE-KMS as S3 answers it, on a store without KMS.

SeaweedFS answers 500 to `x-amz-server-side-encryption: aws:kms`, so such a request is stored as
SSE-S3 (`AES256`, which SeaweedFS encrypts with) plus a private metadata entry holding the KMS key
id; responses that carry the entry get `aws:kms` and the key id back, and never the entry itself.
A client's own header of that name is dropped: only the gateway writes it.

With no key id, S3 uses the account's AWS-managed key (`aws/s3`) and reports its key ARN; here
that key's id is derived from the account and region, so it is the same on every request."""

import threading
import uuid
from collections import OrderedDict

SSE = "x-amz-server-side-encryption"
KMS_KEY_ID = "x-amz-server-side-encryption-aws-kms-key-id"
MARKER = "x-amz-meta-sageport-sse-kms-key-id"
_DROPPED = (
    KMS_KEY_ID,
    "x-amz-server-side-encryption-context",
    "x-amz-server-side-encryption-bucket-key-enabled",
)
_MANAGED_KEY_NAMESPACE = uuid.UUID("5f1a0c3e-8b1e-4d0e-9a57-2b6c1f0e9d41")
_MAX_UPLOADS = 10000


def default_key_arn(region: str, account_id: str) -> str:
    key_id = uuid.uuid5(_MANAGED_KEY_NAMESPACE, f"aws/s3:{region}:{account_id}")
    return f"arn:aws:kms:{region}:{account_id}:key/{key_id}"


def key_arn(requested: str | None, region: str, account_id: str) -> str:
    """The ARN S3 reports for the requested key id (a key id, an alias or an ARN)."""
    if not requested:
        return default_key_arn(region, account_id)
    if requested.startswith("arn:"):
        return requested
    if requested.startswith("alias/"):
        return f"arn:aws:kms:{region}:{account_id}:{requested}"
    return f"arn:aws:kms:{region}:{account_id}:key/{requested}"


def translate_request(headers: dict[str, str], region: str, account_id: str) -> str | None:
    """Rewrite an aws:kms request (lower-cased headers, in place) for the store; return the key
    ARN it asked for, or None."""
    headers.pop(MARKER, None)
    if headers.get(SSE, "").startswith("aws:kms"):
        arn = key_arn(headers.get(KMS_KEY_ID), region, account_id)
        for name in _DROPPED:
            headers.pop(name, None)
        headers[SSE] = "AES256"
        headers[MARKER] = arn
        return arn
    return None


def reflect_response(headers: list[tuple[str, str]], arn: str | None) -> list[tuple[str, str]]:
    """The store's response headers as S3 would send them: the marker (or `arn`, known from the
    request) turned into aws:kms and its key id."""
    arn = arn or next((value for name, value in headers if name.lower() == MARKER), None)
    if arn is None:
        return headers
    kept = [(name, value) for name, value in headers if name.lower() not in (MARKER, SSE, KMS_KEY_ID)]
    return kept + [(SSE, "aws:kms"), (KMS_KEY_ID, arn)]


class MultipartKeys:
    """The KMS key of each multipart upload in progress, so that UploadPart and
    CompleteMultipartUpload reflect it as S3 does (the completed object keeps the marker). Held
    in memory, bounded: after a gateway restart the parts of an older upload report AES256."""

    def __init__(self, limit: int = _MAX_UPLOADS):
        self._keys: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def remember(self, upload_id: str, arn: str) -> None:
        with self._lock:
            self._keys[upload_id] = arn
            while len(self._keys) > self._limit:
                self._keys.popitem(last=False)

    def get(self, upload_id: str) -> str | None:
        with self._lock:
            return self._keys.get(upload_id)

    def forget(self, upload_id: str) -> None:
        with self._lock:
            self._keys.pop(upload_id, None)
