"""Gzipped tar archives made in memory for tests (a model.tar.gz of a few files)."""

import io
import tarfile


def tar_gz(files: dict[str, bytes]) -> bytes:
    """An archive of regular files, by member name (which may be hostile: `../x`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
