"""PyTorch's checkpoint container: an uncompressed zip of records under one
folder (``archive/``), each record's data aligned to 64 bytes.

The records torch writes, in its order: ``data.pkl`` (the pickle),
``.format_version``, ``.storage_alignment``, ``byteorder``, ``data/<key>`` (one
per storage, raw little-endian bytes), ``version`` and ``.data/serialization_id``.
The alignment is padding in each local header's extra field (id ``FB``), as
torch's writer does, so a record's bytes can be mapped straight into a tensor
(``mmap=True``). Reading accepts any folder name, as torch's reader does (the
folder of the first record).
"""

from __future__ import annotations

import secrets
import struct
import sys
import zipfile

STORAGE_ALIGNMENT = 64
FORMAT_VERSION = "3\n"  # torch's kProducedFileFormatVersion for tensors pickled as storages
ARCHIVE_NAME = "archive"
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # the 30 fixed bytes of a zip local file header
_ZIP64_EXTRA_SIZE = 20  # zipfile appends this extra field to a local header when the record needs zip64
# what zipfile raises on a corrupt or truncated archive
_ZIP_ERRORS = (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error, NotImplementedError, KeyError)


class CheckpointWriter:
    """Writes records into a zip, each record's data aligned to STORAGE_ALIGNMENT."""

    def __init__(self, file) -> None:
        self._zip = zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def write_record(self, name: str, data) -> None:
        view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        info = zipfile.ZipInfo(f"{ARCHIVE_NAME}/{name}")
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = len(view)
        zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
        start = self._zip.fp.tell() + _LOCAL_HEADER.size + len(info.filename.encode("utf-8")) + 4
        start += _ZIP64_EXTRA_SIZE if zip64 else 0
        padding = -start % STORAGE_ALIGNMENT
        info.extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
        with self._zip.open(info, "w", force_zip64=zip64) as record:
            record.write(view)

    def close(self) -> None:
        self._zip.close()


def write_checkpoint(file, data_pkl: bytes, storages, disable_byteorder_record: bool = False) -> None:
    """The whole zip: the pickle, the metadata records and one record per storage."""
    writer = CheckpointWriter(file)
    writer.write_record("data.pkl", data_pkl)
    writer.write_record(".format_version", b"1")
    writer.write_record(".storage_alignment", str(STORAGE_ALIGNMENT).encode())
    if not disable_byteorder_record:
        writer.write_record("byteorder", sys.byteorder.encode())
    for storage in storages:
        writer.write_record(f"data/{storage.key}", storage.raw_bytes())
    writer.write_record("version", FORMAT_VERSION.encode())
    writer.write_record(".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())
    writer.close()


class CheckpointReader:
    """The records of a checkpoint zip, under its folder."""

    def __init__(self, file) -> None:
        try:
            self.zip = zipfile.ZipFile(file, "r")
            names = self.zip.namelist()
        except _ZIP_ERRORS as e:
            raise RuntimeError(f"kiln.load: not a valid checkpoint: the zip archive is corrupt or truncated ({e})") \
                from None
        if not names or "/" not in names[0]:
            raise RuntimeError("kiln.load: not a valid checkpoint: the zip archive has no records folder")
        self.archive_bytes = self.zip.fp.seek(0, 2)
        self.prefix = names[0].split("/", 1)[0] + "/"
        self._names = set(names)
        if self.prefix + "data.pkl" not in self._names:
            raise RuntimeError("kiln.load: not a valid checkpoint: the zip archive has no data.pkl "
                               "(it is not a torch.save / kiln.save file)")

    def has_record(self, name: str) -> bool:
        return self.prefix + name in self._names

    def record_info(self, name: str) -> zipfile.ZipInfo:
        """The record's entry; a record that claims more bytes than the archive holds is refused here,
        before anything is allocated for it."""
        if not self.has_record(name):
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} is missing")
        info = self.zip.getinfo(self.prefix + name)
        if info.header_offset + info.compress_size > self.archive_bytes or \
                (info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size):
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} is truncated")
        return info

    def read_record(self, name: str) -> bytes:
        info = self.record_info(name)
        try:
            return self.zip.read(info)
        except _ZIP_ERRORS as e:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: cannot read record {name!r} ({e})") from None

    def read_record_into(self, name: str, out) -> None:
        """Fills the writable buffer ``out`` (exactly the record's size) with the record's bytes."""
        view = memoryview(out).cast("B")
        try:
            with self.zip.open(self.record_info(name)) as record:
                filled = 0
                while filled < len(view):
                    n = record.readinto(view[filled:])
                    if not n:
                        break
                    filled += n
        except _ZIP_ERRORS as e:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: cannot read record {name!r} ({e})") from None
        if filled != len(view):
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} is truncated")

    def data_offset(self, name: str, file_bytes: int) -> int | None:
        """Where the record's bytes start in the file (for mapping it), or None when they are compressed."""
        info = self.record_info(name)
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        fp = self.zip.fp
        fp.seek(info.header_offset)
        header = fp.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} is truncated")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != 0x04034B50:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: bad local header for record {name!r}")
        start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]
        if start + info.file_size > file_bytes:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: record {name!r} is truncated")
        return start
