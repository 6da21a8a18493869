"""kiln.load never runs code under weights_only=True and fails cleanly on
corrupt, truncated or hostile files; kiln.save replaces a file whole or not at all."""

import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import pytest
import torch

import kiln
from kiln.serialization import _save


def checkpoint_with_pickle(data_pkl: bytes, records=None) -> io.BytesIO:
    """A zip laid out as torch's checkpoint, holding an arbitrary data.pkl."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        for name, data in (records or {}).items():
            zf.writestr(f"archive/{name}", data)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


# --- a protocol-2 pickle written opcode by opcode, to say things no pickler would ---
def op_global(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def op_str(s):
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def op_int(i):
    if -2**31 <= i < 2**31:
        return b"J" + struct.pack("<i", i)
    data = pickle.encode_long(i)
    return b"\x8a" + bytes([len(data)]) + data


def op_tuple(*parts):
    return b"(" + b"".join(parts) + b"t"


def rebuild_pickle(size, stride, offset, numel=4, key="0"):
    storage = op_tuple(op_str("storage"), op_global("torch", "FloatStorage"), op_str(key), op_str("cpu"),
                       op_int(numel)) + b"Q"
    args = op_tuple(storage, op_int(offset), op_tuple(*map(op_int, size)), op_tuple(*map(op_int, stride)), b"\x89",
                    op_global("collections", "OrderedDict") + b")R")
    return b"\x80\x02" + op_global("torch._utils", "_rebuild_tensor_v2") + args + b"R."


class RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Greeting:
    """A user class that weights_only=True loads once allowed."""

    def __init__(self, text):
        self.text = text


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_a_pickle_calling_os_system_is_refused_and_never_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"weights": [1.0], "evil": RunsShell(marker)}, protocol=protocol)
    with pytest.raises(pickle.UnpicklingError, match=r"refusing to load '(posix|os)\.system'"):
        kiln.load(checkpoint_with_pickle(payload))
    assert not marker.exists()
    assert kiln.serialization.get_unsafe_globals_in_checkpoint(checkpoint_with_pickle(payload)) in (
        ["posix.system"], ["os.system"])


def test_a_torch_checkpoint_with_a_hostile_object_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"state": torch.ones(2), "evil": RunsShell(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        kiln.load(path)
    assert not marker.exists()


def test_calls_of_what_the_allow_list_does_not_name_are_refused():
    builtins_eval = b"\x80\x02" + op_global("builtins", "eval") + op_tuple(op_str("1+1")) + b"R."
    with pytest.raises(pickle.UnpicklingError, match="refusing to load 'builtins.eval'"):
        kiln.load(checkpoint_with_pickle(builtins_eval))
    getattr_ = b"\x80\x02" + op_global("builtins", "getattr") + b"."
    with pytest.raises(pickle.UnpicklingError, match="refusing to load 'builtins.getattr'"):
        kiln.load(checkpoint_with_pickle(getattr_))
    # a BUILD on an allowed class object (not an instance) would set class attributes
    build_on_class = b"\x80\x02" + op_global("collections", "OrderedDict") + b"}" + op_str("x") + op_int(1) + b"sb."
    with pytest.raises(pickle.UnpicklingError, match="refusing to set the state of type"):
        kiln.load(checkpoint_with_pickle(build_on_class))
    # SETITEM into something that is not a dict
    setitem_into_list = b"\x80\x02]" + op_int(0) + op_int(1) + b"s."
    with pytest.raises(pickle.UnpicklingError, match="SETITEM into list"):
        kiln.load(checkpoint_with_pickle(setitem_into_list))
    # a persistent id that is not a storage record
    not_storage = b"\x80\x02" + op_tuple(op_str("module"), op_str("os")) + b"Q."
    with pytest.raises(pickle.UnpicklingError, match="not a storage record"):
        kiln.load(checkpoint_with_pickle(not_storage))


def test_safe_globals_api_allows_a_class():
    buf = io.BytesIO()
    kiln.save({"greeting": Greeting("hi"), "t": kiln.ones(2)}, buf)
    name = f"{Greeting.__module__}.Greeting"
    assert kiln.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) == [name]
    with pytest.raises(pickle.UnpicklingError, match=f"refusing to load '{name}'"):
        kiln.load(io.BytesIO(buf.getvalue()))
    with kiln.serialization.safe_globals([Greeting]):
        assert Greeting in kiln.serialization.get_safe_globals()
        assert kiln.load(io.BytesIO(buf.getvalue()))["greeting"].text == "hi"
    assert Greeting not in kiln.serialization.get_safe_globals()
    kiln.serialization.add_safe_globals([(Greeting, name)])
    try:
        assert kiln.load(io.BytesIO(buf.getvalue()))["greeting"].text == "hi"
        assert kiln.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) == []
    finally:
        kiln.serialization.clear_safe_globals()
    assert kiln.serialization.get_safe_globals() == []
    with pytest.raises(ValueError, match="tuple of length 2"):
        kiln.serialization.add_safe_globals([(Greeting, name, 3)])


def test_views_outside_their_storage_are_refused():
    records = {"data/0": struct.pack("<4f", 1, 2, 3, 4)}
    assert kiln.load(checkpoint_with_pickle(rebuild_pickle([2], [2], 1), records)).tolist() == [2.0, 4.0]
    for size, stride, offset in (([5], [1], 0), ([2], [3], 1), ([1], [1], 4), ([2**40, 2**40], [0, 0], 0)):
        with pytest.raises(RuntimeError, match="outside its storage"):
            kiln.load(checkpoint_with_pickle(rebuild_pickle(size, stride, offset), records))
    with pytest.raises(RuntimeError, match="negative size or stride"):
        kiln.load(checkpoint_with_pickle(rebuild_pickle([2], [-1], 3), records))
    with pytest.raises(RuntimeError, match="holds fewer than the 8"):
        kiln.load(checkpoint_with_pickle(rebuild_pickle([2], [1], 0, numel=8), records))
    with pytest.raises(RuntimeError, match="record 'data/7' is missing"):
        kiln.load(checkpoint_with_pickle(rebuild_pickle([2], [1], 0, key="7"), records))


def saved_bytes(obj) -> bytes:
    buf = io.BytesIO()
    kiln.save(obj, buf)
    return buf.getvalue()


def test_truncated_empty_and_foreign_files_raise_clear_errors(tmp_path):
    data = saved_bytes({"w": kiln.arange(64.0), "b": kiln.ones(3)})
    for cut in (len(data) // 2, len(data) - 10, 100, 5):
        with pytest.raises(RuntimeError, match="corrupt or truncated|not a checkpoint"):
            kiln.load(io.BytesIO(data[:cut]))
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(RuntimeError, match="file is empty"):
        kiln.load(tmp_path / "empty.pt")
    with pytest.raises(RuntimeError, match="not a checkpoint"):
        kiln.load(io.BytesIO(b"hello, this is not a checkpoint at all"))
    with pytest.raises(RuntimeError, match="legacy checkpoint format"):
        legacy = io.BytesIO()
        torch.save({"x": torch.ones(1)}, legacy, _use_new_zipfile_serialization=False)
        kiln.load(io.BytesIO(legacy.getvalue()))


def test_flipped_bytes_never_crash_or_run_code():
    data = saved_bytes(OrderedDict(w=kiln.arange(6.0).view(2, 3), p=kiln.nn.Parameter(kiln.ones(2)), n=3))
    outcomes = set()
    for position in range(0, len(data), 7):
        corrupt = bytearray(data)
        corrupt[position] ^= 0xFF
        try:
            kiln.load(io.BytesIO(bytes(corrupt)))
            outcomes.add("loaded")
        except (RuntimeError, pickle.UnpicklingError) as e:
            assert "kiln.load" in str(e) or "Bad CRC" in str(e) or "corrupt" in str(e), str(e)
            outcomes.add(type(e).__name__)
    assert "RuntimeError" in outcomes


def test_a_storage_with_a_bad_crc_is_refused():
    data = bytearray(saved_bytes({"w": kiln.arange(16.0)}))
    data[data.index(struct.pack("<f", 7.0))] ^= 0x01
    with pytest.raises(RuntimeError, match="corrupt checkpoint: cannot read record 'data/0'.*CRC"):
        kiln.load(io.BytesIO(bytes(data)))


class FailsToPickle:
    def __reduce__(self):
        raise ValueError("cannot pickle this")


def test_a_failed_save_leaves_the_previous_file_and_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    kiln.save({"step": 1, "w": kiln.ones(3)}, path)
    os.chmod(path, 0o640)
    with pytest.raises(ValueError, match="cannot pickle this"):
        kiln.save({"step": 2, "bad": FailsToPickle()}, path)
    assert kiln.load(path)["step"] == 1 and os.listdir(tmp_path) == ["ckpt.pt"]

    def dies_mid_write(fh, *args):
        fh.write(b"PK\x03\x04 half a checkpoint")
        raise OSError("No space left on device")

    monkeypatch.setattr(_save, "write_checkpoint", dies_mid_write)
    with pytest.raises(OSError, match="No space left"):
        kiln.save({"step": 3, "w": kiln.zeros(3)}, path)
    monkeypatch.undo()
    assert kiln.load(path)["step"] == 1 and os.listdir(tmp_path) == ["ckpt.pt"]
    kiln.save({"step": 4}, path)
    assert kiln.load(path) == {"step": 4} and oct(os.stat(path).st_mode & 0o777) == oct(0o640)
    with pytest.raises(RuntimeError, match="parent directory .* does not exist"):
        kiln.save({"step": 5}, tmp_path / "missing" / "ckpt.pt")


def test_pickle_module_and_legacy_save_options_are_refused_clearly():
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        kiln.load(io.BytesIO(saved_bytes({})), pickle_module=pickle)
    assert kiln.load(io.BytesIO(saved_bytes({"a": 1})), pickle_module=pickle, weights_only=False) == {"a": 1}
    with pytest.raises(NotImplementedError, match="zip checkpoint format only"):
        kiln.save({}, io.BytesIO(), _use_new_zipfile_serialization=False)


def test_a_record_claiming_more_bytes_than_the_file_is_refused_before_allocating():
    data = bytearray(saved_bytes({"w": kiln.arange(16.0)}))
    name = b"archive/data/0"
    entry = data.index(b"PK\x01\x02")  # the central directory's first entry
    while data[entry + 46:entry + 46 + len(name)] != name:
        entry = data.index(b"PK\x01\x02", entry + 4)
    data[entry + 20:entry + 28] = struct.pack("<II", 0x7FFFFFF0, 0x7FFFFFF0)  # compressed and plain sizes
    with pytest.raises(RuntimeError, match="record 'data/0' is truncated"):
        kiln.load(io.BytesIO(bytes(data)))
