"""S3's error responses: XML `<Error><Code/><Message/>...</Error>` with the status S3 uses."""

from xml.sax.saxutils import escape


class S3Error(Exception):
    def __init__(self, status: int, code: str, message: str, **details: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details

    def to_xml(self, resource: str, request_id: str) -> bytes:
        extra = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in self.details.items())
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{self.code}</Code><Message>{escape(self.message)}</Message>{extra}"
            f"<Resource>{escape(resource)}</Resource><RequestId>{request_id}</RequestId></Error>"
        ).encode()


def access_denied() -> S3Error:
    return S3Error(403, "AccessDenied", "Access Denied")


def signature_mismatch() -> S3Error:
    return S3Error(
        403,
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided. "
        "Check your key and signing method.",
    )


def no_such_bucket(bucket: str) -> S3Error:
    return S3Error(404, "NoSuchBucket", "The specified bucket does not exist", BucketName=bucket)


def invalid_request(message: str) -> S3Error:
    return S3Error(400, "InvalidRequest", message)
