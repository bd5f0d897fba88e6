import uuid

import pytest


@pytest.fixture
def bucket(s3_client):
    """A fresh, empty bucket, deleted with its objects afterwards."""
    name = f"sageport-test-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    yield name
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=name):
        for item in page.get("Contents", ()):
            s3_client.delete_object(Bucket=name, Key=item["Key"])
    s3_client.delete_bucket(Bucket=name)
