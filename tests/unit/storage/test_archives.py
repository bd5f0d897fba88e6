import io
import os
import tarfile

import pytest

from workers.storage.archives import ArchiveError, pack_tar_gz, safe_extract


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def read_members(archive):
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}


@pytest.mark.parametrize("use_pigz", [True, False])
def test_pack_merges_several_model_dirs_into_one_archive_later_names_winning(tmp_path, use_pigz):
    write(tmp_path / "algo-1" / "model-1.bin", "one")
    write(tmp_path / "algo-1" / "shared.json", "from algo-1")
    write(tmp_path / "algo-2" / "nested" / "model-2.bin", "two")
    write(tmp_path / "algo-2" / "shared.json", "from algo-2")
    archive = tmp_path / "out" / "model.tar.gz"
    pack_tar_gz([tmp_path / "algo-1", tmp_path / "algo-2"], archive, use_pigz=use_pigz)
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
