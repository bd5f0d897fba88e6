"""Pipe feeding with real FIFOs and real S3: epochs, early close, restart, and the job's end."""
import gzip
import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from jobs import pipe_feeder, sidecars
from storage import safe_files
from storage.s3 import put_bytes

BIG = os.urandom(300 * 1024)  # more than a pipe buffer holds, so an early close means EPIPE


def _fifo(gunzip: bool = False) -> pipe_feeder.Fifo:
    return pipe_feeder.Fifo("/opt/ml/input/data", "train", gunzip)


@pytest.fixture
def start_feeder(tmp_path):
    """Runs `feed` in a thread for a channel `train` of the given objects; returns the FIFO dir.
    At the end the directory goes, as at the job's end, and the feeder must return."""
    fifo_dir, helpers, threads = tmp_path / "data", tmp_path / "sidecars", []
    fifo_dir.mkdir()

    def start(objects: list[tuple[str, str]], gunzip: bool = False) -> Path:
        pipe_feeder.define(helpers, "pipe-train", fifo_dir, _fifo(gunzip), objects)
        thread = threading.Thread(target=pipe_feeder.feed, args=(sidecars.spec_of(helpers, "pipe-train"),))
        thread.start()
        threads.append(thread)
        return fifo_dir

    yield start
    safe_files.remove_tree(fifo_dir)  # as workspace.remove does at the job's end
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()


@pytest.fixture
def feeder(bucket, start_feeder) -> Path:
    """A feeder of objects `data/a` then `data/b` (put in the other order)."""
    put_bytes(bucket, "data/b", b"second")
    put_bytes(bucket, "data/a", BIG)
    return start_feeder([(bucket, "data/a"), (bucket, "data/b")])


def open_epoch(fifo_dir: Path, epoch: int, timeout: float = 10.0):
    """Open `train_<epoch>` as an algorithm does: retry until it appears."""
    path = fifo_dir / f"train_{epoch}"
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)
    return open(path, "rb")


def test_each_epoch_is_the_objects_concatenated_in_key_order(feeder):
    for epoch in range(3):
        with open_epoch(feeder, epoch) as pipe:
            assert hashlib.sha256(pipe.read()).digest() == hashlib.sha256(BIG + b"second").digest()
    assert not (feeder / "train_0").exists()


def test_closing_an_epoch_early_moves_on_to_a_full_next_epoch(feeder):
    with open_epoch(feeder, 0) as pipe:
        assert pipe.read(5) == BIG[:5]
    with open_epoch(feeder, 1) as pipe:
        assert pipe.read() == BIG + b"second"


def test_a_gzip_channel_is_streamed_decompressed_member_after_member(bucket, start_feeder):
    put_bytes(bucket, "gz/a.gz", gzip.compress(BIG) + gzip.compress(b"tail"))
    fifo_dir = start_feeder([(bucket, "gz/a.gz")], gunzip=True)
    with open_epoch(fifo_dir, 0) as pipe:
        assert pipe.read() == BIG + b"tail"


def test_a_restarted_feeder_continues_after_the_last_epoch_it_began(tmp_path):
    epoch_file = tmp_path / "pipe-train.epoch"
    assert pipe_feeder.first_epoch(epoch_file) == 0
    epoch_file.write_text("4")
    assert pipe_feeder.first_epoch(epoch_file) == 5


def test_a_link_in_place_of_the_fifo_is_refused_never_written_through(bucket, tmp_path):
    put_bytes(bucket, "data/a", b"records")
    fifo_dir, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    fifo_dir.mkdir()
    os.mkfifo(elsewhere)
    os.symlink(elsewhere, fifo_dir / "train_0")
    helpers = tmp_path / "sidecars"
    pipe_feeder.define(helpers, "pipe-train", fifo_dir, _fifo(), [(bucket, "data/a")])
    with pytest.raises(sidecars.HelperFailed, match="train_0 in the input data directory is not a pipe"):
        pipe_feeder.feed(sidecars.spec_of(helpers, "pipe-train"))


def test_a_data_directory_swapped_for_a_link_to_a_host_directory_gets_nothing_there(feeder, tmp_path):
    """/opt/ml/input is writable: the container renames `data` and puts a link to a host
    directory in its place. The next epoch's FIFO still appears in the directory the feeder
    opened (the container's own), and nothing is created in or removed from the host's."""
    host_dir = tmp_path / "host-etc"
    host_dir.mkdir()
    (host_dir / "train_1").write_text("a host file of that name")
    with open_epoch(feeder, 0) as pipe:
        pipe.read()
    moved = feeder.with_name("data.moved")
    feeder.rename(moved)
    feeder.symlink_to(host_dir)

    with open_epoch(moved, 1) as pipe:
        assert pipe.read() == BIG + b"second"

    assert sorted(path.name for path in host_dir.iterdir()) == ["train_1"]
    assert (host_dir / "train_1").read_text() == "a host file of that name"
    feeder.unlink()
    moved.rename(feeder)  # so that the fixture's removal ends the feeder


def test_a_data_directory_that_is_a_link_when_the_feeder_starts_fails_the_job(bucket, tmp_path):
    put_bytes(bucket, "data/a", b"records")
    host_dir, fifo_dir, helpers = tmp_path / "host-etc", tmp_path / "data", tmp_path / "sidecars"
    host_dir.mkdir()
    fifo_dir.symlink_to(host_dir)
    pipe_feeder.define(helpers, "pipe-train", fifo_dir, _fifo(), [(bucket, "data/a")])

    with pytest.raises(sidecars.HelperFailed, match="replaced by a link"):
        pipe_feeder.feed(sidecars.spec_of(helpers, "pipe-train"))

    assert list(host_dir.iterdir()) == []


def test_a_feeder_ends_when_the_removal_of_its_directory_races_its_next_fifo(bucket, tmp_path, monkeypatch):
    """The removal lists the directory, the feeder creates the next FIFO, the removal's rmdir
    finds the directory not empty: the directory must still go, and the feeder end."""
    put_bytes(bucket, "data/a", b"records")
    fifo_dir, helpers = tmp_path / "data", tmp_path / "sidecars"
    fifo_dir.mkdir()
    listed = threading.Event()
    real_mkfifo, real_rmdir = os.mkfifo, os.rmdir

    def mkfifo_once_listed(path, *args, **kwargs):
        if Path(path).name == "train_1":
            listed.wait(10)
        return real_mkfifo(path, *args, **kwargs)

    def rmdir_once_the_next_fifo_is_there(path, *args, **kwargs):
        if Path(path) == fifo_dir and not listed.is_set():  # the first pass only
            listed.set()
            deadline = time.monotonic() + 10
            while not os.path.lexists(fifo_dir / "train_1") and time.monotonic() < deadline:
                time.sleep(0.01)
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkfifo", mkfifo_once_listed)
    monkeypatch.setattr(os, "rmdir", rmdir_once_the_next_fifo_is_there)
    pipe_feeder.define(helpers, "pipe-train", fifo_dir, _fifo(), [(bucket, "data/a")])
    thread = threading.Thread(target=pipe_feeder.feed, args=(sidecars.spec_of(helpers, "pipe-train"),))
    thread.start()
    with open_epoch(fifo_dir, 0) as pipe:
        assert pipe.read() == b"records"
    deadline = time.monotonic() + 10
    while (fifo_dir / "train_0").exists():  # the feeder is between the two epochs
        assert time.monotonic() < deadline
        time.sleep(0.01)

    safe_files.remove_tree(fifo_dir)

    thread.join(timeout=10)
    assert not fifo_dir.exists() and not thread.is_alive()
