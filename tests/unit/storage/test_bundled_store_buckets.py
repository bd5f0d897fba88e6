"""The bundled store holds as many buckets as a team makes: SeaweedFS gives every bucket volumes
of its own and, left to its defaults, allowed only free disk / volume size of them (70 on a disk
with 70 GiB free), so the next bucket's first write answered 500 InternalError."""
import uuid
from concurrent.futures import ThreadPoolExecutor

BUCKETS = 120  # beyond the default allowance of a machine with less than 120 GiB free
# Each bucket's requests wait on the store (it makes the bucket's volumes): a few buckets at a time
# take the same requests in a fraction of the time. The count stays what the store must hold.
CLIENTS = 8


def test_more_buckets_than_the_stores_default_allowance_each_take_objects(s3_client):
    names = [f"sageport-many-{uuid.uuid4().hex[:12]}" for _ in range(BUCKETS)]
    created = []

    def create_and_write(name: str) -> None:
        s3_client.create_bucket(Bucket=name)
        created.append(name)
        s3_client.put_object(Bucket=name, Key="first.csv", Body=name.encode())

    def read(name: str) -> bytes:
        return s3_client.get_object(Bucket=name, Key="first.csv")["Body"].read()

    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(create_and_write, names))  # list(): the first failure is raised here
            assert list(pool.map(read, names)) == [name.encode() for name in names]
    finally:
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(lambda name: _delete_bucket(s3_client, name), created))


def _delete_bucket(s3_client, name: str) -> None:
    s3_client.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "first.csv"}], "Quiet": True})
    s3_client.delete_bucket(Bucket=name)
