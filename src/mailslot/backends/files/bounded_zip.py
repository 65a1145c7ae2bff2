"""Reading a month archive (``archive/YYYY-MM.zip``) as if it were hostile, within bounds.

mailslot writes these zips, but they lie in a folder any process of the user can write:
a planted or damaged zip must cost no more than a bounded read, whatever it claims. So,
before anything is decompressed (docs/security.md, "Zip bombs"):

* the zip's directory, found from its end record, may hold at most :data:`MAX_MEMBERS`
  members in at most :data:`MAX_DIRECTORY_BYTES`;
* a member may only be stored or deflated (what mailslot writes);
* a member's declared size may not pass the caller's limit (the largest message file
  the mailbox's send limit allows), nor, past :data:`RATIO_FLOOR`, :data:`MAX_RATIO`
  times its packed size;

and a member is read streaming, never more than the limit and one byte, whatever its
header says. mailslot writes a member that deflates past the ratio stored instead
(:func:`compression_for`), so it never writes a zip it would refuse.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import BinaryIO

from ...core.errors import StoreError

MAX_MEMBERS = 200_000
"""Message copies one month's zip may hold (listing that many takes about 150 MB)."""
MAX_RATIO = 100
"""How many times its packed size a member may unpack to (text deflates 2 to 10 times)."""
RATIO_FLOOR = 64 << 10
"""A member up to this size is never refused for its ratio: it cannot be a bomb."""
_ENTRY_BYTES = 320
"""The largest directory entry of a member mailslot writes (46 bytes and its name)."""
MAX_DIRECTORY_BYTES = MAX_MEMBERS * _ENTRY_BYTES
_END = b"PK\x05\x06"
_END64 = b"PK\x06\x06"
_LOCATOR64 = b"PK\x06\x07"
_ENTRY = b"PK\x01\x02"


class ZipRefused(StoreError):
    """A zip, or a member of it, past the bounds: refused before it was decompressed."""


_READ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
                RuntimeError, NotImplementedError)
"""What reading a damaged or strange zip raises (a bad CRC, an encrypted member, ...)."""


def open_zip(raw: BinaryIO, shown: str) -> zipfile.ZipFile:
    """``raw`` as a zip, once its directory was found within bounds."""
    try:
        _check_directory(raw, shown)
        return zipfile.ZipFile(raw)
    except _READ_ERRORS as exc:
        raise StoreError(f"{shown} is not a readable zip ({exc}); nothing was changed "
                         "(move it aside to go on)") from None


def _check_directory(raw: BinaryIO, shown: str) -> None:
    """Refuse a zip whose directory (the list :mod:`zipfile` reads whole into memory)
    is larger, or holds more members, than a month's archive may: located as
    :mod:`zipfile` locates it, and its members counted by their signatures."""
    size = raw.seek(0, 2)
    start = max(0, size - 22 - (1 << 16))
    raw.seek(start)
    tail = raw.read()
    at = len(tail) - 22 if tail[-22:-18] == _END and tail[-2:] == b"\0\0" \
        else tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        return  # no end record: zipfile refuses it
    directory = struct.unpack("<4s4H2LH", tail[at:at + 22])[5]
    end = start + at
    raw.seek(max(0, end - 20))
    if end >= 20 and raw.read(20)[:4] == _LOCATOR64:  # zip64: sizes in its own record
        raw.seek(max(0, end - 20 - 56))
        record = raw.read(56)
        if len(record) < 56 or record[:4] != _END64:
            return  # zipfile refuses it
        directory = struct.unpack("<4sQ2H2L4Q", record)[8]
        end -= 20 + 56
    if directory > end:
        return  # a directory before the file's start: zipfile refuses it
    if directory > MAX_DIRECTORY_BYTES:
        raise ZipRefused(f"{shown} has a directory of {directory} bytes, past the "
                         f"{MAX_DIRECTORY_BYTES} a month archive needs; refused unread")
    raw.seek(end - directory)
    members = raw.read(directory).count(_ENTRY)
    if members > MAX_MEMBERS:
        raise ZipRefused(f"{shown} lists {members} members, past the {MAX_MEMBERS} a month "
                         "archive may hold; refused unread")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int,
                shown: str) -> bytes:
    """A member's bytes: refused before it is decompressed if its header passes the
    bounds (the module docstring), and read streaming up to ``limit`` bytes."""
    name = f"{info.filename} in {shown}"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ZipRefused(f"{name} is packed a way mailslot never packs; refused unread")
    if info.file_size > limit:
        raise ZipRefused(f"{name} is {info.file_size} bytes, past {limit} (the largest "
                         "message max_body_bytes allows); refused unread")
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * info.compress_size:
        raise ZipRefused(f"{name} unpacks to more than {MAX_RATIO} times its packed size "
                         f"({info.compress_size} to {info.file_size} bytes); refused unread")
    try:
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except _READ_ERRORS as exc:
        raise ZipRefused(f"{name} cannot be read ({exc}); refused") from None
    if len(data) > limit:
        raise ZipRefused(f"{name} unpacks past {limit} bytes, more than its header says; "
                         "refused")
    return data


def compression_for(data: bytes) -> int:
    """How mailslot packs ``data`` as a member: deflated, unless that would pass
    :data:`MAX_RATIO` (a body of one repeated line), which :func:`read_member` refuses."""
    if len(data) <= RATIO_FLOOR:
        return zipfile.ZIP_DEFLATED
    packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)  # zipfile's
    packed = len(packer.compress(data)) + len(packer.flush())
    return zipfile.ZIP_DEFLATED if len(data) <= MAX_RATIO * packed else zipfile.ZIP_STORED
