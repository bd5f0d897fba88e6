"""An in-memory object store standing in for the storage seam (`storage/s3.py`, and the
channel staging built on it) where a reconciler test needs S3: objects are bytes by (bucket, key).

`install` patches the few functions the training reconciler reaches (artifact uploads, channel
staging, the instance archives of a job spanning nodes); the archives are still packed for real,
so a test can open what was "uploaded"."""
import io
import tarfile
from pathlib import Path, PurePosixPath

from accounts import s3_tenancy
from storage import archives, s3
from training import reconciler as training


class FakeStore:
    def __init__(self):
        self.objects: dict[tuple[str, str], bytes] = {}
        self.unreachable = False  # every call fails as an unreachable store does (transient)

    def put(self, uri: str, body: bytes) -> None:
        self.objects[s3.parse_s3_uri(uri)] = body

    def keys(self, bucket: str) -> list[str]:
        return sorted(key for stored_bucket, key in self.objects if stored_bucket == bucket)

    def tar_members(self, uri: str) -> dict[str, bytes]:
        """The regular files inside the .tar.gz stored at `uri`, by name."""
        with tarfile.open(fileobj=io.BytesIO(self.objects[s3.parse_s3_uri(uri)]), mode="r:gz") as archive:
            return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}

    # --- the seam -------------------------------------------------------------------------

    def _answer(self) -> None:
        if self.unreachable:
            raise s3.StorageError("Could not reach the object store: connection refused", transient=True)

    def upload_tar_gz(self, sources: list[Path], bucket: str, key: str) -> int:
        self._answer()
        packed = io.BytesIO()
        members = archives.write_tar_gz(sources, packed)
        self.objects[(bucket, key)] = packed.getvalue()
        return members

    def download_many(self, items: list[tuple[str, str, Path]], budget=None) -> None:
        self._answer()
        for bucket, key, destination in items:
            if (bucket, key) not in self.objects:
                raise s3.StorageError(f"Could not read {s3.s3_uri(bucket, key)}: NoSuchKey")
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(self.objects[(bucket, key)])

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        self._answer()
        return [key for key in self.keys(bucket) if key.startswith(prefix)]

    def delete_keys(self, bucket: str, keys: list[str]) -> None:
        self._answer()
        for key in keys:
            self.objects.pop((bucket, key), None)

    def upload_tree(self, root: Path, bucket: str, prefix: str) -> int:
        files = [path for path in sorted(root.rglob("*")) if path.is_file() and not path.is_symlink()]
        for path in files:
            self._answer()
            self.objects[(bucket, f"{prefix}/{path.relative_to(root).as_posix()}")] = path.read_bytes()
        return len(files)

    def stage_channel(
        self, account_id: str, channel: dict, dest: Path, host_index: int, host_count: int
    ) -> int:
        """Every object under the channel's S3Prefix, written below `dest` (one host's view)."""
        self._answer()
        bucket, prefix = s3.parse_s3_uri(channel["DataSource"]["S3DataSource"]["S3Uri"])
        staged = 0
        for key in self.keys(bucket):
            if key.startswith(prefix):
                target = dest / PurePosixPath(key[len(prefix):].lstrip("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(self.objects[(bucket, key)])
                staged += 1
        return staged

    def install(self, monkeypatch) -> "FakeStore":
        monkeypatch.setattr(archives, "upload_tar_gz", self.upload_tar_gz)
        monkeypatch.setattr(s3, "upload_tree", self.upload_tree)
        for name in ("download_many", "list_keys", "delete_keys"):
            monkeypatch.setattr(s3, name, getattr(self, name))
        monkeypatch.setattr(training, "stage_channel", self.stage_channel)
        # Every bucket of the fake store is the job's account's: the tenancy rule has tests of its
        # own (tests/unit/accounts/test_s3_tenancy.py), these are about the steps around it.
        monkeypatch.setattr(s3_tenancy, "may_use", lambda account_id, bucket: True)
        return self
