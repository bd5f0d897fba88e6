"""A child's log file never grows past the limit: it is copied aside and truncated in place, and
a writer holding the file open (as the stack's children do) keeps writing to it."""
from devstack.log_rotation import rotate_if_large


def test_a_large_log_is_copied_aside_and_truncated_while_its_writer_keeps_appending(tmp_path):
    path = tmp_path / "worker.log"
    with open(path, "ab", buffering=0) as child_fd:  # what a child inherited
        for generation in range(5):
            child_fd.write(f"generation {generation}\n".encode() * 100)
            assert rotate_if_large(path, max_bytes=1000, backups=2)
        child_fd.write(b"after\n")

    assert path.read_bytes() == b"after\n"  # at the start of the file: no hole of NUL bytes
    assert (tmp_path / "worker.log.1").read_bytes().startswith(b"generation 4\n")
    assert (tmp_path / "worker.log.2").read_bytes().startswith(b"generation 3\n")
    assert not (tmp_path / "worker.log.3").exists()


def test_a_small_or_missing_log_is_left_alone(tmp_path):
    path = tmp_path / "api.log"
    assert not rotate_if_large(path, max_bytes=1000, backups=2)
    path.write_bytes(b"x" * 1000)
    assert not rotate_if_large(path, max_bytes=1000, backups=2)
    assert path.read_bytes() == b"x" * 1000
