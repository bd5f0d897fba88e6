"""Checkpoint sync: which files a pass uploads or deletes, and a pass against real S3."""
import os
import shutil
import signal
from pathlib import Path

from storage.s3 import list_keys, put_bytes
from training.data import checkpoint_sync
from training.data.checkpoint_sync import Plan, plan


def test_a_file_is_uploaded_once_its_size_and_mtime_held_still_for_a_scan():
    assert plan({"a": (5, 1)}, previous={}, uploaded={}, final=False) == Plan([], [])
    assert plan({"a": (5, 1)}, previous={"a": (5, 1)}, uploaded={}, final=False) == Plan(["a"], [])


def test_a_file_still_growing_waits_but_the_final_pass_uploads_it():
    assert plan({"a": (9, 2)}, previous={"a": (5, 1)}, uploaded={}, final=False) == Plan([], [])
    assert plan({"a": (9, 2)}, previous={}, uploaded={}, final=True) == Plan(["a"], [])


def test_an_uploaded_file_that_did_not_change_is_not_uploaded_again():
    assert plan({"a": (5, 1)}, previous={"a": (5, 1)}, uploaded={"a": (5, 1)}, final=True) == Plan([], [])


def test_only_files_this_host_had_are_deleted_when_they_go():
    assert plan({}, previous={"a": (5, 1)}, uploaded={"a": (5, 1)}, final=False) == Plan([], ["a"])
    assert plan({}, previous={}, uploaded={}, final=True) == Plan([], [])


def write(path: Path, data: bytes, mtime_ns: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_restore_then_sync_mirror_the_directory_under_the_prefix(bucket, tmp_path):
    put_bytes(bucket, "ckpt/old/step-1.pt", b"one")
    put_bytes(bucket, "elsewhere/x", b"not ours")
    local, helpers = tmp_path / "checkpoints", tmp_path / "sidecars"
    local.mkdir()
    checkpoint_sync.define(helpers, "checkpoints-algo-1", local, (bucket, "ckpt"))

    assert checkpoint_sync.restore(helpers, "checkpoints-algo-1") == 1
    assert (local / "old" / "step-1.pt").read_bytes() == b"one"

    write(local / "step-2.pt", b"two", 10**18)
    (local / "old" / "step-1.pt").unlink()
    checkpoint_sync.final_sync(helpers, "checkpoints-algo-1")

    assert list_keys(bucket, "") == ["ckpt/step-2.pt", "elsewhere/x"]


def test_sync_uploads_nothing_through_links_to_host_files_or_directories(bucket, tmp_path):
    host = tmp_path / "host"
    write(host / "secret.txt", b"host secret", 10**18)
    local, helpers = tmp_path / "checkpoints", tmp_path / "sidecars"
    local.mkdir()
    checkpoint_sync.define(helpers, "checkpoints-algo-1", local, (bucket, "ckpt"))
    checkpoint_sync.restore(helpers, "checkpoints-algo-1")
    write(local / "mine.pt", b"mine", 10**18)
    os.symlink(host, local / "dir-link")
    os.symlink(host / "secret.txt", local / "file-link")

    checkpoint_sync.final_sync(helpers, "checkpoints-algo-1")

    assert list_keys(bucket, "") == ["ckpt/mine.pt"]


def test_a_file_swapped_for_a_link_after_the_scan_is_skipped_and_tried_again(bucket, tmp_path, monkeypatch):
    host = tmp_path / "host"
    write(host / "secret.txt", b"host secret", 10**18)
    local, helpers = tmp_path / "checkpoints", tmp_path / "sidecars"
    write(local / "sub" / "step.pt", b"step", 10**18)
    checkpoint_sync.define(helpers, "checkpoints-algo-1", local, (bucket, "ckpt"))
    spec = checkpoint_sync.sidecars.spec_of(helpers, "checkpoints-algo-1")
    scanned = checkpoint_sync.scan(local)
    (local / "sub" / "step.pt").unlink()
    (local / "sub").rmdir()
    os.symlink(host, local / "sub")
    (host / "step.pt").write_bytes(b"host file")
    monkeypatch.setattr(checkpoint_sync, "scan", lambda directory: scanned)  # the swap came after it

    checkpoint_sync.sync_once(spec, previous={}, final=True)

    assert list_keys(bucket, "") == []
    monkeypatch.undo()
    (local / "sub").unlink()
    write(local / "sub" / "step.pt", b"step", 10**18)
    checkpoint_sync.sync_once(spec, previous={}, final=True)  # not recorded as uploaded: tried again
    assert list_keys(bucket, "") == ["ckpt/sub/step.pt"]


class HelperKilled(BaseException):
    """The SIGTERM that stops the helper, arriving between an upload and the manifest's save."""


def test_a_helper_killed_between_an_upload_and_its_record_leaves_no_stray_object(
    bucket, tmp_path, monkeypatch
):
    local, helpers = tmp_path / "checkpoints", tmp_path / "sidecars"
    local.mkdir()
    checkpoint_sync.define(helpers, "checkpoints-algo-1", local, (bucket, "ckpt"))
    checkpoint_sync.restore(helpers, "checkpoints-algo-1")
    write(local / "parked" / "step.pt", b"step", 10**18)  # a directory caught mid-rename
    spec = checkpoint_sync.sidecars.spec_of(helpers, "checkpoints-algo-1")
    upload = checkpoint_sync.s3.upload_contained

    def upload_then_die(root, items):
        upload(root, items)
        raise HelperKilled

    monkeypatch.setattr(checkpoint_sync.s3, "upload_contained", upload_then_die)
    try:
        checkpoint_sync.sync_once(spec, previous={}, final=True)
    except HelperKilled:
        pass
    monkeypatch.undo()
    assert list_keys(bucket, "") == ["ckpt/parked/step.pt"]
    (local / "parked").rename(local / "real")

    checkpoint_sync.final_sync(helpers, "checkpoints-algo-1")

    assert list_keys(bucket, "") == ["ckpt/real/step.pt"]


def test_a_helper_asked_to_stop_during_an_upload_finishes_it_then_ends(
    bucket, tmp_path, monkeypatch, settings
):
    # An upload cut off once its body was sent can still complete in S3 after the final sync
    # deleted the object: SIGTERM (the job's end) lets the pass under way finish instead.
    settings.SAGEPORT_CHECKPOINT_SCAN_SECONDS = 0.01
    local, helpers = tmp_path / "checkpoints", tmp_path / "sidecars"
    local.mkdir()
    checkpoint_sync.define(helpers, "checkpoints-algo-1", local, (bucket, "ckpt"))
    checkpoint_sync.restore(helpers, "checkpoints-algo-1")
    write(local / "step.pt", b"step", 10**18)
    spec = checkpoint_sync.sidecars.spec_of(helpers, "checkpoints-algo-1")
    upload, passes = checkpoint_sync.s3.upload_contained, []

    def terminated_while_uploading(root, items):
        os.kill(os.getpid(), signal.SIGTERM)  # what sidecars.stop_all sends
        return upload(root, items)

    monkeypatch.setattr(checkpoint_sync.s3, "upload_contained", terminated_while_uploading)
    monkeypatch.setattr(checkpoint_sync, "sync_once", _counted(checkpoint_sync.sync_once, passes, local))
    default_handler = signal.signal(signal.SIGTERM, lambda signum, frame: None)  # never this process's end
    try:
        checkpoint_sync.run(spec)  # returns: the helper process would exit here
    finally:
        signal.signal(signal.SIGTERM, default_handler)

    assert list_keys(bucket, "ckpt/") == ["ckpt/step.pt"]  # the upload under way finished
    assert len(passes) == 2  # a scan, then the pass that uploaded; none after the signal


def _counted(function, calls: list, local: Path):
    def counted(*args, **kwargs):
        calls.append(args)
        if len(calls) > 5:  # a helper that did not stop: end its loop (its directory went)
            shutil.rmtree(local)
        return function(*args, **kwargs)

    return counted
