import functools
import gzip
import io
import os
import subprocess
import tarfile
import threading

import pytest

from storage import archives, s3, safe_files, upload_stream
from storage.archives import ArchiveError, safe_extract, write_tar_gz


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def pack_tar_gz(sources, archive):
    archive.parent.mkdir(parents=True, exist_ok=True)
    with archive.open("wb") as out:
        return write_tar_gz(sources, out)


def read_members(archive):
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}


def test_pack_merges_several_model_dirs_into_one_archive_later_names_winning(tmp_path):
    write(tmp_path / "algo-1" / "model-1.bin", "one")
    write(tmp_path / "algo-1" / "shared.json", "from algo-1")
    write(tmp_path / "algo-2" / "nested" / "model-2.bin", "two")
    write(tmp_path / "algo-2" / "shared.json", "from algo-2")
    archive = tmp_path / "out" / "model.tar.gz"
    pack_tar_gz([tmp_path / "algo-1", tmp_path / "algo-2"], archive)
    assert read_members(archive) == {
        "model-1.bin": "one",
        "nested/model-2.bin": "two",
        "shared.json": "from algo-2",
    }
    with tarfile.open(archive) as tar:
        assert tar.getnames() == ["model-1.bin", "nested", "nested/model-2.bin", "shared.json"]


def test_pack_stores_symlinks_as_links_without_reading_their_target(tmp_path):
    write(tmp_path / "host-secret", "secret")
    (tmp_path / "model").mkdir()
    os.symlink(tmp_path / "host-secret", tmp_path / "model" / "link")
    archive = tmp_path / "model.tar.gz"
    pack_tar_gz([tmp_path / "model"], archive)
    with tarfile.open(archive) as tar:
        (member,) = tar.getmembers()
        assert member.issym() and member.size == 0


def test_safe_extract_restores_a_packed_model(tmp_path):
    write(tmp_path / "model" / "weights" / "w.bin", "weights")
    pack_tar_gz([tmp_path / "model"], tmp_path / "model.tar.gz")
    assert safe_extract(tmp_path / "model.tar.gz", tmp_path / "restored") == 2
    assert (tmp_path / "restored" / "weights" / "w.bin").read_text() == "weights"


def archive_with(tmp_path, *members: tarfile.TarInfo):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return path


def file_member(name):
    member = tarfile.TarInfo(name)
    member.size = 1
    return member


def link_member(name, target, kind=tarfile.SYMTYPE):
    member = tarfile.TarInfo(name)
    member.type, member.linkname = kind, target
    return member


@pytest.mark.parametrize(
    "member, named",
    [
        (file_member("../x"), "'../x'"),
        (file_member(".."), "'..'"),
        (file_member("ok/../../x"), "'ok/../../x'"),
        (file_member("/etc/x"), "'/etc/x'"),
        (link_member("link", "/etc/passwd"), "'link'"),
        (link_member("sub/link", "../../outside"), "'sub/link'"),
        (link_member("hard", "../outside", tarfile.LNKTYPE), "'hard'"),
    ],
)
def test_safe_extract_refuses_members_that_escape_the_destination(tmp_path, member, named):
    archive = archive_with(tmp_path, member)
    with pytest.raises(ArchiveError, match=f"Refusing archive member {named}"):
        safe_extract(archive, tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []
    assert not (tmp_path / "x").exists()


def directory_member(name):
    member = tarfile.TarInfo(name)
    member.type = tarfile.DIRTYPE
    return member


@pytest.mark.parametrize("root", ["", ".", "./", "/", "//", "./."])
def test_safe_extract_accepts_a_directory_member_naming_the_archive_root(tmp_path, root):
    """The SageMaker SDK v2 repacks a model with `tarfile.add(model_dir, arcname=os.path.sep)`
    (sagemaker/utils.py `_save_model`), whose first member is the root directory read back as '';
    `tar czf model.tar.gz -C model .` writes './'. Neither leaves the destination."""
    members = [directory_member(root), directory_member("code"), file_member("code/inference.py")]
    assert safe_extract(archive_with(tmp_path, *members), tmp_path / "dest") == 3
    assert (tmp_path / "dest" / "code" / "inference.py").read_text() == "x"


def test_safe_extract_reads_the_sdk_repack_of_a_model_with_its_code(tmp_path):
    write(tmp_path / "model" / "model.pth", "weights")
    write(tmp_path / "model" / "code" / "inference.py", "def model_fn(d): ...")
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, mode="w:gz") as tar:
        tar.add(tmp_path / "model", arcname=os.path.sep)  # what the SDK v2's repack does
    assert safe_extract(archive, tmp_path / "dest") == 4
    assert (tmp_path / "dest" / "code" / "inference.py").read_text() == "def model_fn(d): ..."


@pytest.mark.parametrize(
    "member, named",
    [
        (file_member("."), "'.'"),
        (file_member(""), "''"),
        (link_member(".", "/etc"), "'.'"),
        (directory_member(".."), "'..'"),
        (directory_member("/etc"), "'/etc'"),
        (directory_member("./.."), "'./..'"),
    ],
)
def test_safe_extract_refuses_what_is_not_the_root_directory_itself(tmp_path, member, named):
    with pytest.raises(ArchiveError, match=f"Refusing archive member {named}"):
        safe_extract(archive_with(tmp_path, member), tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []


def test_safe_extract_refuses_device_files(tmp_path):
    device = tarfile.TarInfo("dev")
    device.type = tarfile.CHRTYPE
    with pytest.raises(ArchiveError, match="Refusing archive member 'dev': device"):
        safe_extract(archive_with(tmp_path, device), tmp_path / "dest")


def test_safe_extract_refuses_writing_through_a_chain_of_links(tmp_path):
    chain = [link_member("l1", "."), link_member("l1/l2", ".."), file_member("l1/l2/x")]
    archive = archive_with(tmp_path, *chain)
    with pytest.raises(ArchiveError):
        safe_extract(archive, tmp_path / "dest")
    assert not (tmp_path / "x").exists()


def test_safe_extract_reports_a_corrupt_archive(tmp_path):
    (tmp_path / "bad.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(ArchiveError, match="Could not extract bad.tar.gz"):
        safe_extract(tmp_path / "bad.tar.gz", tmp_path / "dest")


def test_pack_never_enters_a_directory_link_and_leaves_out_fifos(tmp_path):
    write(tmp_path / "host" / "secret", "secret")
    write(tmp_path / "model" / "weights.bin", "weights")
    os.symlink(tmp_path / "host", tmp_path / "model" / "linked-dir")
    os.mkfifo(tmp_path / "model" / "pipe")
    archive = tmp_path / "model.tar.gz"
    pack_tar_gz([tmp_path / "model"], archive)
    with tarfile.open(archive) as tar:
        members = {member.name: member for member in tar.getmembers()}
    assert sorted(members) == ["linked-dir", "weights.bin"]
    assert members["linked-dir"].issym() and members["linked-dir"].linkname == str(tmp_path / "host")


def test_pack_does_not_follow_a_directory_swapped_for_a_link_after_it_was_listed(tmp_path, monkeypatch):
    write(tmp_path / "host" / "ckpt.bin", "host secret")
    write(tmp_path / "model" / "sub" / "ckpt.bin", "model")
    listed = safe_files.walk(tmp_path / "model")
    (tmp_path / "model" / "sub" / "ckpt.bin").unlink()
    (tmp_path / "model" / "sub").rmdir()
    os.symlink(tmp_path / "host", tmp_path / "model" / "sub")  # the swap, between listing and reading
    monkeypatch.setattr(archives.safe_files, "walk", lambda root: listed)
    archive = tmp_path / "model.tar.gz"
    pack_tar_gz([tmp_path / "model"], archive)
    assert read_members(archive) == {}


@pytest.mark.parametrize(
    "members",
    [
        # Each link is harmless alone, and when extracted; together `b` points above the destination.
        [link_member("b", "a/.."), link_member("a", ".")],
        [link_member("a", "c/.."), link_member("c", "d"), link_member("d", ".")],
        [link_member("loop", "loop/x")],
        [link_member("l", "."), link_member("h", "l/../x", tarfile.LNKTYPE)],
    ],
)
def test_safe_extract_refuses_links_that_leave_the_destination_through_other_links(tmp_path, members):
    with pytest.raises(ArchiveError, match="outside the destination"):
        safe_extract(archive_with(tmp_path, *members), tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []


def test_safe_extract_refuses_a_member_placed_through_a_link(tmp_path):
    members = [link_member("inside", "sub"), file_member("inside/x")]
    with pytest.raises(ArchiveError, match="'inside/x': its path goes through the link 'inside'"):
        safe_extract(archive_with(tmp_path, *members), tmp_path / "dest")


def test_safe_extract_keeps_links_that_stay_inside(tmp_path):
    members = [
        file_member("data/w.bin"), link_member("latest", "data/w.bin"), link_member("data/self", "../latest"),
    ]
    assert safe_extract(archive_with(tmp_path, *members), tmp_path / "dest") == 3
    assert (tmp_path / "dest" / "data" / "self").read_text() == "x"


def test_safe_extract_refuses_an_archive_whose_files_exceed_the_size_limit(tmp_path):
    big = file_member("big")
    big.size = 2048
    archive = archive_with(tmp_path, big, file_member("small"))
    with pytest.raises(ArchiveError, match="2049 bytes, more than the limit of 2048 bytes"):
        safe_extract(archive, tmp_path / "dest", max_bytes=2048)
    assert list((tmp_path / "dest").iterdir()) == []
    assert safe_extract(archive, tmp_path / "ok", max_bytes=2049) == 2


def tar_listing(fileobj):
    """Every member's name, type, mode, owner, mtime, size, link target and content."""
    with tarfile.open(fileobj=fileobj, mode="r:gz") as tar:
        return [
            (m.name, m.type, m.mode, m.uid, m.gid, m.mtime, m.size, m.linkname,
             tar.extractfile(m).read() if m.isfile() else None)
            for m in tar.getmembers()
        ]


@pytest.fixture
def model_tree(tmp_path):
    """A model directory with modes, nesting, a link out to a host file, a FIFO and a big file."""
    root = tmp_path / "model"
    write(root / "weights" / "w.bin", "weights")
    (root / "weights" / "w.bin").chmod(0o640)
    (root / "weights").chmod(0o750)
    (root / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))  # three 5 MiB parts
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    write(tmp_path / "host-secret", "secret")
    os.symlink(tmp_path / "host-secret", root / "secret-link")
    os.mkfifo(root / "pipe")
    return root


def test_the_archive_is_standard_gzip_with_members_modes_and_links_never_followed(model_tree, tmp_path):
    """Read back by Python's gzip and tarfile (what SageMaker's toolkits use) and by gzip and tar."""
    out = io.BytesIO()
    assert write_tar_gz([model_tree], out) == 5
    listing = tar_listing(io.BytesIO(out.getvalue()))
    inflated = gzip.decompress(out.getvalue())  # Python's gzip reads it too
    assert tarfile.open(fileobj=io.BytesIO(inflated)).getnames() == [entry[0] for entry in listing]
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(out.getvalue())
    subprocess.run(["gzip", "--test", str(archive)], check=True)
    listed = subprocess.run(["tar", "-tzf", str(archive)], check=True, capture_output=True, text=True)
    assert sorted(listed.stdout.split()) == ["big.bin", "run.sh", "secret-link", "weights/", "weights/w.bin"]
    by_name = {entry[0]: entry for entry in listing}
    assert sorted(by_name) == ["big.bin", "run.sh", "secret-link", "weights", "weights/w.bin"]
    assert by_name["weights/w.bin"][2] == 0o640 and by_name["weights"][2] == 0o750
    assert by_name["run.sh"][2] == 0o755
    assert by_name["big.bin"][8] == (model_tree / "big.bin").read_bytes()
    link = by_name["secret-link"]
    assert link[1] == tarfile.SYMTYPE and link[6] == 0 and link[7] == str(model_tree.parent / "host-secret")
    status = os.lstat(model_tree / "run.sh")
    assert by_name["run.sh"][3:6] == (status.st_uid, status.st_gid, int(status.st_mtime))


def test_upload_tar_gz_streams_the_archive_to_s3_in_parts(bucket, model_tree, monkeypatch, tmp_path):
    small_parts = functools.partial(upload_stream.upload_stream, part_bytes=5 * 1024 * 1024)
    monkeypatch.setattr(archives, "upload_stream", small_parts)
    assert archives.upload_tar_gz([model_tree], bucket, "job/output/model.tar.gz") == 5
    uploaded = s3.get_bytes(bucket, "job/output/model.tar.gz")
    expected = io.BytesIO()
    write_tar_gz([model_tree], expected)
    assert tar_listing(io.BytesIO(uploaded)) == tar_listing(io.BytesIO(expected.getvalue()))
    assert list(tmp_path.rglob("*.tar.gz")) == []  # nothing packed to disk


def test_a_file_that_cannot_be_read_fails_the_upload_and_writes_nothing(bucket, model_tree, monkeypatch):
    real_open = safe_files.open_regular

    def open_regular(root, relative):
        if relative == "run.sh":
            raise OSError(5, "Input/output error")
        return real_open(root, relative)

    monkeypatch.setattr(archives.safe_files, "open_regular", open_regular)
    with pytest.raises(OSError, match="Input/output error"):
        archives.upload_tar_gz([model_tree], bucket, "job/output/model.tar.gz")
    assert s3.list_keys(bucket, "") == []


def test_a_failing_destination_stops_the_compression_thread_and_is_raised(model_tree):
    class Refusing:
        def write(self, data):
            raise s3.StorageError("Could not write s3://b/k: SlowDown", transient=True)

        def flush(self):
            pass

    threads_before = threading.active_count()
    with pytest.raises(s3.StorageError, match="SlowDown"):
        write_tar_gz([model_tree], Refusing())
    assert threading.active_count() == threads_before  # the compression thread ended
