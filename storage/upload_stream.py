"""One S3 object written as a stream of unknown length, uploaded while it is produced, no file.

`upload_stream(bucket, key)` gives a writable object. What is written is cut into parts that go
up as a multipart upload on a few threads while the writer goes on; the writer waits only when
`parallel` parts are already on their way, so memory stays at a few parts whatever the size. A
stream that never fills one part goes as a single PutObject when it ends: a small artifact costs
one request. An error on either side (the writer's, or S3's) aborts the multipart upload: no
object is written and no parts are left behind. S3 errors are `StorageError`s, as everywhere."""

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from storage.s3 import StorageError, get_client, s3_errors, s3_uri

logger = logging.getLogger(__name__)

PART_BYTES = 8 * 1024 * 1024  # S3's least part is 5 MiB (all but the last)
PARALLEL_PARTS = 4
# S3 takes at most 10,000 parts: the part size doubles every this many, so a stream of any size
# fits (8 MiB parts up to ~8 GB, 16 MiB up to ~24 GB, ...) without knowing its length first.
_PARTS_PER_SIZE = 1000


@contextmanager
def upload_stream(bucket: str, key: str, part_bytes: int = PART_BYTES,
                  parallel: int = PARALLEL_PARTS) -> Iterator["UploadStream"]:
    """A writable whose bytes become s3://bucket/key once the block ends without an error."""
    stream = UploadStream(bucket, key, part_bytes, parallel)
    try:
        yield stream
        stream.finish()
    except BaseException:
        stream.abort()
        raise


class UploadStream:
    def __init__(self, bucket: str, key: str, part_bytes: int, parallel: int):
        self.bucket, self.key = bucket, key
        self.location = s3_uri(bucket, key)
        self._first_part_bytes = part_bytes
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[Future] = []
        self._pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="s3-part")
        self._slots = threading.Semaphore(parallel)  # parts handed to the pool, not yet uploaded
        self._failure: StorageError | None = None

    def write(self, data: bytes) -> int:
        self._buffer += data
        while len(self._buffer) >= self._part_bytes():
            self._send_part(self._part_bytes())
        return len(data)

    def flush(self) -> None:
        """Nothing to do: whole parts go as they fill, and `finish` sends the rest."""

    def finish(self) -> None:
        """Write the object: one PutObject for less than one part, else the last part and the
        multipart upload's completion once every part is up."""
        if self._upload_id is None:
            with s3_errors("write", self.location):
                get_client().put_object(Bucket=self.bucket, Key=self.key, Body=bytes(self._buffer))
            return
        if self._buffer:
            self._send_part(len(self._buffer))
        parts = [{"PartNumber": number, "ETag": part.result()} for number, part in enumerate(self._parts, 1)]
        self._pool.shutdown()
        with s3_errors("write", self.location):
            get_client().complete_multipart_upload(
                Bucket=self.bucket, Key=self.key, UploadId=self._upload_id, MultipartUpload={"Parts": parts}
            )

    def abort(self) -> None:
        """Drop what was uploaded: parts not started are cancelled, those on their way waited for,
        then the upload aborted (a failure to abort is logged, never hides the first error)."""
        self._pool.shutdown(cancel_futures=True)
        if self._upload_id is None:
            return
        try:
            with s3_errors("abort the upload of", self.location):
                get_client().abort_multipart_upload(
                    Bucket=self.bucket, Key=self.key, UploadId=self._upload_id
                )
        except StorageError as error:
            logger.warning("%s (upload %s left to the bucket's lifecycle rules)", error, self._upload_id)

    def _part_bytes(self) -> int:
        return self._first_part_bytes << (len(self._parts) // _PARTS_PER_SIZE)

    def _send_part(self, size: int) -> None:
        if self._upload_id is None:
            with s3_errors("write", self.location):
                answer = get_client().create_multipart_upload(Bucket=self.bucket, Key=self.key)
            self._upload_id = answer["UploadId"]
        body = bytes(self._buffer[:size])
        del self._buffer[:size]
        self._slots.acquire()  # bounded memory: wait while `parallel` parts are on their way
        if self._failure is not None:
            self._slots.release()
            raise self._failure
        part = self._pool.submit(self._upload_part, len(self._parts) + 1, body)
        part.add_done_callback(lambda _: self._slots.release())
        self._parts.append(part)

    def _upload_part(self, number: int, body: bytes) -> str:
        try:
            with s3_errors("write", self.location):
                answer = get_client().upload_part(
                    Bucket=self.bucket, Key=self.key, UploadId=self._upload_id, PartNumber=number, Body=body
                )
        except StorageError as error:
            self._failure = self._failure or error
            raise
        return answer["ETag"]
