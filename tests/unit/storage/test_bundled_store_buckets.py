"""The bundled store holds as many buckets as a team makes: SeaweedFS gives every bucket volumes
of its own and, left to its defaults, allowed only free disk / volume size of them (70 on a disk
with 70 GiB free), so the next bucket's first write answered 500 InternalError."""
import uuid

BUCKETS = 120  # beyond the default allowance of a machine with less than 120 GiB free


def test_more_buckets_than_the_stores_default_allowance_each_take_objects(s3_client):
    names = [f"sageport-many-{uuid.uuid4().hex[:12]}" for _ in range(BUCKETS)]
    created = []
    try:
        for name in names:
            s3_client.create_bucket(Bucket=name)
            created.append(name)
            s3_client.put_object(Bucket=name, Key="first.csv", Body=name.encode())
        assert [s3_client.get_object(Bucket=name, Key="first.csv")["Body"].read() for name in names] == [
            name.encode() for name in names
        ]
    finally:
        for name in created:
            _delete_bucket(s3_client, name)


def _delete_bucket(s3_client, name: str) -> None:
    s3_client.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "first.csv"}], "Quiet": True})
    s3_client.delete_bucket(Bucket=name)
