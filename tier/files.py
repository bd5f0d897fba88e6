"""The tier's files under --root: everything is written to `tmp/` first and renamed into place,
so a crash never leaves a half-written shard or record visible.

A shard file is one file, so that its checksum header and its body appear together:
`SGT1`, a 4-byte big-endian header length, the header JSON (`shard_meta`, `size`), the body."""

import json
import os
import struct
import uuid
from pathlib import Path

MAGIC = b"SGT1"
_LENGTH = struct.Struct(">I")
MAX_HEADER_BYTES = 64 * 1024


def temp_path(temp_dir: Path) -> Path:
    return temp_dir / uuid.uuid4().hex


def write_json_atomically(path: Path, document: dict, temp_dir: Path) -> None:
    temp = temp_path(temp_dir)
    temp.write_text(json.dumps(document))
    os.replace(temp, path)


def read_json(path: Path) -> dict | None:
    """The document, or None when the file is absent or not a JSON object."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def shard_header(shard_meta: str, size: int) -> bytes:
    header = json.dumps({"shard_meta": shard_meta, "size": size}).encode()
    return MAGIC + _LENGTH.pack(len(header)) + header


def read_shard_header(handle) -> tuple[str, int]:
    """(shard_meta, body size) of an open shard file, leaving it positioned at the body;
    ValueError when the file is not a whole shard."""
    prefix = handle.read(len(MAGIC) + _LENGTH.size)
    if len(prefix) != len(MAGIC) + _LENGTH.size or not prefix.startswith(MAGIC):
        raise ValueError("not a shard file")
    (length,) = _LENGTH.unpack(prefix[len(MAGIC):])
    if length > MAX_HEADER_BYTES:
        raise ValueError("shard header too long")
    header = json.loads(handle.read(length))
    shard_meta, size = header.get("shard_meta"), header.get("size")
    if not isinstance(shard_meta, str) or not isinstance(size, int):
        raise ValueError("shard header incomplete")
    if os.fstat(handle.fileno()).st_size != len(prefix) + length + size:
        raise ValueError("shard body truncated")
    return shard_meta, size
