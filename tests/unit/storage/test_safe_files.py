"""Reading a tree a container controls: no symlink followed anywhere, no FIFO or device opened."""
import os
import socket
import stat
import threading

import pytest

from storage import safe_files
from storage.safe_files import UnsafeFile, contained, open_regular, read_bounded, walk


@pytest.fixture
def secret(tmp_path):
    """A host file outside the tree, as a container would like to read it."""
    path = tmp_path / "host" / "secret"
    path.parent.mkdir()
    path.write_text("host secret")
    return path


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.txt").write_text("real")
    return root


def test_a_regular_file_is_read_bounded_in_bytes(tree):
    (tree / "big").write_bytes(b"x" * 10_000)
    assert read_bounded(tree, "sub/real.txt", 100) == b"real"
    assert read_bounded(tree, "big", 1024) == b"x" * 1024


def test_a_symlink_at_the_leaf_is_refused_not_followed(tree, secret):
    os.symlink(secret, tree / "failure")
    with pytest.raises(UnsafeFile):
        read_bounded(tree, "failure", 1024)


def test_a_symlink_as_an_intermediate_directory_is_refused_not_followed(tree, secret):
    os.symlink(secret.parent, tree / "linked")
    with pytest.raises(UnsafeFile):
        read_bounded(tree, "linked/secret", 1024)


def test_a_root_that_is_a_symlink_is_refused(tmp_path, secret):
    os.symlink(secret.parent, tmp_path / "root")
    with pytest.raises(UnsafeFile):
        read_bounded(tmp_path / "root", "secret", 1024)
    assert walk(tmp_path / "root") == []


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_blocking(tree):
    os.mkfifo(tree / "failure")
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_refused(tree, "failure")), daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert outcome == [True], "reading a FIFO with no writer must not block"


def test_a_socket_is_refused(tree):
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tree / "sock"))
        assert _refused(tree, "sock")
    finally:
        server.close()


def test_a_device_is_refused_without_being_opened(tree):
    # /dev/null's numbers: were it opened and read, the read would succeed with b"".
    os.mknod(tree / "dev", stat.S_IFCHR | 0o644, os.stat("/dev/null").st_rdev)
    assert _refused(tree, "dev")


def test_a_directory_is_refused_and_absence_is_file_not_found(tree):
    assert _refused(tree, "sub")
    with pytest.raises(FileNotFoundError):
        open_regular(tree, "absent")


@pytest.mark.parametrize("relative", ["../tree/sub/real.txt", "/etc/passwd", ""])
def test_paths_that_leave_the_root_are_refused(tree, relative):
    with pytest.raises(UnsafeFile):
        open_regular(tree, relative)


def test_walk_lists_links_as_links_and_never_enters_them(tree, secret):
    os.symlink(secret, tree / "file-link")
    os.symlink(secret.parent, tree / "sub" / "dir-link")
    os.mkfifo(tree / "fifo")
    entries = {entry.relative: (entry.kind, entry.target) for entry in walk(tree)}
    assert entries == {
        "file-link": ("symlink", str(secret)),
        "sub": ("directory", ""),
        "sub/dir-link": ("symlink", str(secret.parent)),
        "sub/real.txt": ("file", ""),
    }


@pytest.mark.parametrize(
    "relative, expected",
    [("a/b.csv", "a/b.csv"), ("./a", "a"), ("../a", None), ("a/../../b", None), ("/abs", None), ("", None)],
)
def test_contained_accepts_only_paths_that_stay_below_their_directory(relative, expected):
    path = contained(relative)
    assert (path.as_posix() if path is not None else None) == expected


def test_remove_tree_removes_what_appears_while_it_removes(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    (root / "train_1").touch()
    real_rmtree, passes = safe_files.shutil.rmtree, []

    def rmtree_racing_a_feeder(path, ignore_errors=False):
        passes.append(path)
        if len(passes) > 1:
            return real_rmtree(path, ignore_errors=ignore_errors)
        (root / "train_1").unlink()  # what this pass removed,
        os.mkfifo(root / "train_2")  # what a feeder created after it listed the directory:
        return None  # its rmdir failed (not empty), silently with ignore_errors

    monkeypatch.setattr(safe_files.shutil, "rmtree", rmtree_racing_a_feeder)
    safe_files.remove_tree(root)
    assert not root.exists()
    assert len(passes) == 2


def _refused(root, relative) -> bool:
    try:
        read_bounded(root, relative, 1024)
    except UnsafeFile:
        return True
    return False
