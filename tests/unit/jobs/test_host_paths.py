"""`jobs/staging.host_paths`: what batch transform reads on each instance. The instances share the
objects (each takes every N-th key, as ShardedByS3Key does), and each object keeps its path below
the input prefix, where its `<path>.out` goes under S3OutputPath (developer guide, "Use Batch
Transform": input `s3://bucket/input-data-prefix/mydata/file.csv` is written to
`s3://bucket/output-prefix/mydata/file.csv.out`)."""
from accounts.s3_tenancy import S3Location
from jobs import staging
from storage.s3 import parse_s3_uri


def test_instances_share_the_objects_and_keep_their_paths(monkeypatch):
    monkeypatch.setattr(
        staging.s3_tenancy, "location", lambda account, uri, action="read": S3Location(*parse_s3_uri(uri))
    )
    keys = ["in/a.csv", "in/sub/b.csv", "in/c.csv", "in/dir/"]
    monkeypatch.setattr(staging, "list_keys", lambda bucket, prefix: keys)
    source = staging.S3Input("transform input", "input", "s3://b/in/", "S3Prefix", "ShardedByS3Key", "out")

    first, second = staging.host_paths("1", source, 0, 2), staging.host_paths("1", source, 1, 2)

    assert first == [("b", "in/a.csv", "a.csv"), ("b", "in/sub/b.csv", "sub/b.csv")]
    assert second == [("b", "in/c.csv", "c.csv")]
