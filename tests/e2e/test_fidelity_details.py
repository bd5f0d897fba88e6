"""Details a peer's test suite and real clients found, as a boto3 user sees them on the live stack:
a credential scope naming a region AWS does not have, and the runtime operations not served."""

import pytest
import urllib3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from django.conf import settings

from tests.e2e.conftest import unique_name

NO_RETRIES = Config(retries={"max_attempts": 1})
FAKE_REGION = "xx-fake-9"  # well-formed, but no AWS partition has it (botocore's partitions.json)


def _error(call) -> dict:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response


def test_a_region_aws_does_not_have_is_refused_and_never_written_into_an_arn(stack, bucket):
    """AWS: 403 "Credential should be scoped to a valid region, not 'wrong-region'." (as an SDK
    reported SQS's answer); S3: 400 AuthorizationHeaderMalformed "The authorization header is
    malformed; the region '…' is wrong; expecting '…'" with the expected <Region>."""
    name = unique_name("fake-region")
    sagemaker = stack.client("sagemaker", region_name=FAKE_REGION, config=NO_RETRIES)
    refused = _error(lambda: sagemaker.create_model(ModelName=name, PrimaryContainer={"Image": "img:1"}))
    assert refused["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert refused["Error"] == {
        "Code": "InvalidSignatureException",
        "Message": f"Credential should be scoped to a valid region, not '{FAKE_REGION}'.",
    }
    assert stack.client("sagemaker").list_models(NameContains=name)["Models"] == []

    runtime = stack.client("sagemaker-runtime", region_name=FAKE_REGION, config=NO_RETRIES)
    invoked = _error(lambda: runtime.invoke_endpoint(EndpointName=name, Body=b"1"))
    assert (invoked["ResponseMetadata"]["HTTPStatusCode"], invoked["Error"]["Code"]) == (
        403,
        "InvalidSignatureException",
    )

    url = f"{stack.s3_endpoint_url}/{bucket}/refused"
    request = AWSRequest("PUT", url, data=b"x")
    credentials = Credentials(stack.access_key_id, stack.secret_access_key)
    S3SigV4Auth(credentials, "s3", FAKE_REGION).add_auth(request)
    answer = urllib3.request("PUT", url, body=b"x", headers=dict(request.headers.items()))
    assert answer.status == 400
    error, home = answer.data.decode(), settings.SAGEPORT_S3_REGION
    assert "<Code>AuthorizationHeaderMalformed</Code>" in error and f"<Region>{home}</Region>" in error
    assert (
        f"<Message>The authorization header is malformed; the region '{FAKE_REGION}' is wrong; "
        f"expecting '{home}'</Message>"
    ) in error
    # botocore follows S3's <Region> (its S3 region redirector signs again for it), as on AWS.
    s3 = stack.client("s3", region_name=FAKE_REGION)
    s3.put_object(Bucket=bucket, Key="followed", Body=b"x")
    assert stack.client("s3").get_object(Bucket=bucket, Key="followed")["Body"].read() == b"x"
