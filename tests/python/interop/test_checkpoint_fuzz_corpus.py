"""kiln.load against fuzz/corpus/load (issue 30): every seed and every input that once
broke kiln.load (regression_*) loads or raises RuntimeError / pickle.UnpicklingError
naming the problem, and so do a few hundred seeded mutations of them
(fuzz/python/fuzz_load.py; scripts/fuzz.sh runs it for longer)."""

import importlib.util
import io
import json
import pickle
import struct
import sys
import zipfile
from pathlib import Path

import pytest

import kiln

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "fuzz" / "corpus" / "load"


def _fuzz_load():
    sys.path.insert(0, str(ROOT / "fuzz" / "python"))
    spec = importlib.util.spec_from_file_location("fuzz_load", ROOT / "fuzz" / "python" / "fuzz_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz_load = _fuzz_load()


@pytest.mark.parametrize("path", sorted(CORPUS.iterdir()), ids=lambda p: p.name)
def test_corpus_entry_loads_or_fails_cleanly(path):
    outcome = fuzz_load.check_one(path.read_bytes())
    if path.name.startswith("seed_"):
        assert outcome == "loaded", f"seed {path.name} no longer loads"


def test_seeded_mutations_load_or_fail_cleanly(tmp_path):
    corpus = fuzz_load.load_corpus([str(CORPUS)])
    outcomes = fuzz_load.fuzz(corpus, seconds=0, seed=30, artifacts=tmp_path, runs=300)
    assert outcomes.get("loaded", 0) >= len(corpus)  # at least the seeds
    assert outcomes.get("RuntimeError", 0) + outcomes.get("UnpicklingError", 0) > 0


# --- what fuzz_load found (each also a regression_* entry of the corpus) ---------------------------

def _zip_checkpoint(data_pkl: bytes) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


def _safetensors(header: dict, data: bytes = b"") -> io.BytesIO:
    text = json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(text)) + text + data)


def test_a_safetensors_entry_of_the_wrong_shape_is_a_corrupt_file():
    """The header's JSON was trusted: a missing key was a KeyError, a non-object a TypeError."""
    with pytest.raises(RuntimeError, match=r"corrupt safetensors file: 'w' has no \[begin, end\] data_offsets"):
        kiln.load(_safetensors({"w": {"dtype": "F32", "shape": [2]}}, b"\0" * 8))
    with pytest.raises(RuntimeError, match="corrupt safetensors file: the entry for 'w' is not a JSON object"):
        kiln.load(_safetensors({"w": [1, 2]}))
    with pytest.raises(RuntimeError, match="corrupt safetensors file: 'w' has no shape of non-negative"):
        kiln.load(_safetensors({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8))
    with pytest.raises(RuntimeError, match="'w' holds 8 bytes, not the 12 of shape"):
        kiln.load(_safetensors({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8))
    with pytest.raises(RuntimeError, match="unsupported safetensors dtype"):
        kiln.load(_safetensors({"w": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8))


def test_cpythons_own_unpickling_errors_name_the_checkpoint():
    """A BINGET of a memo slot never set raised CPython's bare 'Memo value not found'."""
    with pytest.raises(pickle.UnpicklingError, match=r"kiln.load: corrupt checkpoint: its pickle is invalid "
                                                     r"\(Memo value not found"):
        kiln.load(_zip_checkpoint(b"\x80\x02h\x28."))


def test_a_truncated_pickle_opcode_is_a_corrupt_checkpoint():
    """A BINUNICODE cut inside its length escaped as struct.error."""
    with pytest.raises(pickle.UnpicklingError, match=r"kiln.load: corrupt checkpoint: its pickle is invalid "
                                                     r"\(error: unpack requires"):
        kiln.load(_zip_checkpoint(b"\x80\x02X\x05\x00"))
