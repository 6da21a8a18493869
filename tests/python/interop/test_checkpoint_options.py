"""kiln.load's and kiln.save's options: the kinds of file, mmap, map_location,
the checkpoint's records and their alignment, big-endian files."""

import io
import pathlib
import struct
import zipfile

import numpy as np
import pytest
import torch

import kiln


def saved_bytes(obj) -> bytes:
    buf = io.BytesIO()
    kiln.save(obj, buf)
    return buf.getvalue()


def rewritten(data: bytes, edit) -> bytes:
    """The checkpoint with each record passed through edit(name, bytes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, edit(name, src.read(name)))
    return out.getvalue()


class NonSeekable(io.RawIOBase):
    def __init__(self, data):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def seekable(self):
        return False

    def readinto(self, b):
        chunk = self._data.read(len(b))
        b[:len(chunk)] = chunk
        return len(chunk)


def test_paths_path_likes_and_file_objects(tmp_path):
    obj = {"w": kiln.arange(6.0).view(2, 3)}
    kiln.save(obj, str(tmp_path / "a.pt"))
    kiln.save(obj, pathlib.Path(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as fh:
        kiln.save(obj, fh)
    data = (tmp_path / "a.pt").read_bytes()
    assert data[:4] == b"PK\x03\x04"
    with open(tmp_path / "c.pt", "rb") as fh:
        loaded = [kiln.load(str(tmp_path / "a.pt")), kiln.load(tmp_path / "b.pt"), kiln.load(fh),
                  kiln.load(io.BytesIO(data)), kiln.load(NonSeekable(data))]
    for back in loaded:
        assert back["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_records_are_torchs_and_aligned_to_64_bytes():
    data = saved_bytes({"a": kiln.ones(3), "b": kiln.zeros(5, dtype=kiln.float16), "c": kiln.ones(1)})
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.namelist() == ["archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
                                  "archive/byteorder", "archive/data/0", "archive/data/1", "archive/data/2",
                                  "archive/version", "archive/.data/serialization_id"]
    assert archive.read("archive/byteorder") == b"little" and archive.read("archive/version") == b"3\n"
    for info in archive.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        fields = struct.unpack("<IHHHHHIIIHH", data[info.header_offset:info.header_offset + 30])
        assert (info.header_offset + 30 + fields[9] + fields[10]) % 64 == 0, info.filename
    assert archive.read("archive/data/1") == bytes(10)


def test_mmap_maps_the_storages_copy_on_write(tmp_path):
    path = tmp_path / "m.pt"
    base = kiln.arange(1000.0)
    kiln.save({"w": base, "v": base[10:20]}, path)
    before = path.read_bytes()
    loaded = kiln.load(path, mmap=True)
    assert loaded["w"][:3].tolist() == [0.0, 1.0, 2.0] and loaded["v"].tolist() == [float(i) for i in range(10, 20)]
    loaded["w"].add_(1)
    assert loaded["v"][0].item() == 11.0  # still views of one storage
    assert path.read_bytes() == before  # in-place changes stay in memory
    with pytest.raises(ValueError, match="must be a file path in order to use the mmap argument"):
        kiln.load(io.BytesIO(before), mmap=True)


def test_mmap_on_a_torch_file(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"w": torch.arange(12, dtype=torch.bfloat16).view(3, 4), "i": torch.arange(5)}, path)
    loaded = kiln.load(path, mmap=True)
    assert loaded["w"].dtype is kiln.bfloat16 and loaded["w"].float().tolist()[2] == [8.0, 9.0, 10.0, 11.0]
    assert loaded["i"].tolist() == [0, 1, 2, 3, 4]


def on_cuda(data: bytes) -> bytes:
    """The checkpoint as if its storages had been saved from cuda:0."""
    cpu, cuda = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"
    return rewritten(data, lambda name, rec: rec.replace(cpu, cuda) if name.endswith("data.pkl") else rec)


def test_map_location_forms():
    data = saved_bytes({"w": kiln.arange(4.0), "tied": kiln.arange(4.0)})
    for map_location in (None, "cpu", kiln.device("cpu"), {"cuda:0": "cpu"}, lambda storage, location: storage,
                         lambda storage, location: None):
        assert kiln.load(io.BytesIO(data), map_location=map_location)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    cuda_data = on_cuda(data)
    assert torch.load(io.BytesIO(cuda_data), map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"CUDA device 'cuda:0' but kiln.cuda.is_available\(\) is False"):
        kiln.load(io.BytesIO(cuda_data))
    seen = []
    for map_location in ("cpu", {"cuda:0": "cpu"}, lambda storage, location: seen.append(location) or storage):
        assert kiln.load(io.BytesIO(cuda_data), map_location=map_location)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert seen == ["cuda:0", "cuda:0"]
    with pytest.raises(RuntimeError, match="must return the storage"):
        kiln.load(io.BytesIO(data), map_location=lambda storage, location: "elsewhere")
    with pytest.raises(RuntimeError, match="places storages on 'cpu' only"):
        kiln.load(io.BytesIO(data), map_location="mps")


def test_big_endian_files_are_byteswapped():
    values = np.arange(6, dtype=np.float32)

    def to_big_endian(name, record):
        if name.endswith("byteorder"):
            return b"big"
        if name.endswith("data/0"):
            return values.astype(">f4").tobytes()
        return record

    data = rewritten(saved_bytes({"w": kiln.tensor(values)}), to_big_endian)
    assert kiln.load(io.BytesIO(data))["w"].tolist() == values.tolist()


def test_safetensors_files_still_load_through_kiln_load(tmp_path):
    kiln.serialization.save_file({"x": kiln.ones(2, 2)}, tmp_path / "w.safetensors")
    assert kiln.load(tmp_path / "w.safetensors")["x"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert kiln.load(tmp_path / "w.safetensors", weights_only=False)["x"].shape == (2, 2)


def test_pickle_protocols_above_two_round_trip_in_kiln():
    obj = {"w": kiln.ones(3), "d": kiln.float16, "p": kiln.nn.Parameter(kiln.zeros(1))}
    for protocol in (3, 4, 5):
        buf = io.BytesIO()
        kiln.save(obj, buf, pickle_protocol=protocol)
        buf.seek(0)
        back = kiln.load(buf)
        assert back["w"].tolist() == [1.0, 1.0, 1.0] and back["d"] is kiln.float16
        assert isinstance(back["p"], kiln.nn.Parameter)
        buf.seek(0)
        assert torch.load(buf, weights_only=False)["d"] is torch.float16


def test_mmap_shared_writes_reach_the_file(tmp_path):
    import mmap

    path = tmp_path / "shared.pt"
    kiln.save({"w": kiln.zeros(4)}, path)
    assert kiln.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
    with kiln.serialization.set_default_mmap_options(mmap.MAP_SHARED):
        loaded = kiln.load(path, mmap=True)
        loaded["w"].fill_(2.0)
        del loaded
    assert kiln.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
    assert kiln.load(path, mmap=True)["w"].tolist() == [2.0] * 4  # (mapped: the record's CRC is now stale)
    with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED"):
        kiln.serialization.set_default_mmap_options(12345)


def test_a_file_without_byteorder_uses_the_default_load_endianness():
    buf = io.BytesIO()
    kiln.save({"w": kiln.tensor([1.0, 2.0])}, buf, _disable_byteorder_record=True)
    assert "archive/byteorder" not in zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()
    assert kiln.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [1.0, 2.0]
    endianness = kiln.serialization.LoadEndianness
    kiln.serialization.set_default_load_endianness(endianness.BIG)
    try:
        swapped = kiln.load(io.BytesIO(buf.getvalue()))["w"]
    finally:
        kiln.serialization.set_default_load_endianness(None)
    assert swapped.numpy().tolist() == np.array([1.0, 2.0], dtype="<f4").view(">f4").astype(np.float32).tolist()
    with pytest.raises(TypeError, match="Invalid argument type"):
        kiln.serialization.set_default_load_endianness("big")
