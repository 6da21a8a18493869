"""The kernel cache (codegen/llvm/KernelCache.h, Note [The kernel cache]): a second compile of a kernel is an
in-memory hit; after the in-memory cache is emptied it loads from KILN_CACHE_DIR; a truncated, corrupt,
foreign or other-version entry is discarded and recompiled, and the result still equals eager; two processes
compiling the same kernels into one directory leave whole entries; pruning removes entries of other builds or
formats, abandoned temporaries and the least recently used beyond a size cap (Note [Pruning the kernel cache])."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import _C, _logging

rt = _C._runtime

HEADER_BYTES = 48  # magic[8], format u32, header size u32, key u64, text size u64, object size u64, checksum u64


def chain(c: float):
    """A one-kernel function whose kernel is its own (the constant is in the kernel IR)."""
    return lambda x: ((x * c + 1.0).sin() - 0.25).relu() * 3.0


def compiled_value(fn, x):
    with kiln.no_grad():
        return kiln.compile(fn)(x)


def assert_equals_eager(fn, x):
    with kiln.no_grad():
        np.testing.assert_array_equal(compiled_value(fn, x).numpy(), fn(x).numpy())


def stats() -> dict:
    return rt.kernel_cache_stats()


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "kernels").glob("*.kobj"))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty disk cache; the in-memory cache emptied (code already loaded stays valid); counters at zero."""
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    yield tmp_path
    rt.forget_compiled_kernels()


@pytest.fixture
def x():
    return kiln.from_numpy(np.linspace(-3, 3, 1003, dtype=np.float32))


def test_cache_dir_follows_the_environment(cache):
    assert rt.kernel_cache_dir() == str(cache)


def test_miss_writes_an_entry_and_a_fresh_in_memory_cache_loads_it(cache, x):
    fn = chain(1.5)
    assert_equals_eager(fn, x)
    s = stats()
    assert (s["misses"], s["disk_writes"], s["disk_hits"], s["memory_hits"]) == (1, 1, 0, 0)
    assert len(entries(cache)) == 1
    assert not list((cache / "kernels").glob("*.tmp.*")), "the temporary file is renamed"
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    assert_equals_eager(fn, x)
    s = stats()
    assert (s["misses"], s["disk_hits"], s["disk_rejected"]) == (0, 1, 0)


def test_second_compile_is_an_in_memory_hit(cache, x):
    fn = chain(2.5)
    first = compiled_value(fn, x)
    rt.reset_kernel_cache_stats()
    second = compiled_value(fn, x)  # a new kiln.compile: capture again, the kernel from memory
    s = stats()
    assert (s["memory_hits"], s["disk_hits"], s["misses"]) == (1, 0, 0)
    np.testing.assert_array_equal(first.numpy(), second.numpy())


def test_codegen_log_shows_the_llvm_ir_or_where_the_kernel_came_from(cache, x, caplog):
    fn = chain(9.5)
    _logging.set_logs(codegen=True)
    try:
        with caplog.at_level("INFO", logger="kiln.compile.codegen"):
            assert_equals_eager(fn, x)
            compiled_text = "\n".join(r.getMessage() for r in caplog.records)
            caplog.clear()
            rt.forget_compiled_kernels()
            assert_equals_eager(fn, x)
            loaded_text = "\n".join(r.getMessage() for r in caplog.records)
    finally:
        _logging.set_logs()
    assert "= sin e" in compiled_text and "define void @kernel_" in compiled_text
    assert "= sin e" in loaded_text and "loaded from the disk cache" in loaded_text
    assert "memory plan:" in loaded_text


def test_kernels_differing_only_in_a_constant_are_different_entries(cache, x):
    assert_equals_eager(chain(3.0), x)
    assert_equals_eager(chain(3.0000002), x)
    assert stats()["misses"] == 2
    assert len(entries(cache)) == 2


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0x01])


def _foreign_header(data: bytes) -> bytes:
    return b"NOTKILN!" + data[8:]


def _other_version(data: bytes) -> bytes:
    (version,) = struct.unpack_from("<I", data, 8)
    return data[:8] + struct.pack("<I", version + 1) + data[12:]


def _header_only(data: bytes) -> bytes:
    return data[:HEADER_BYTES]


@pytest.mark.parametrize("damage, reason", [
    (_truncate, "truncated"),
    (_header_only, "truncated"),
    (_flip_last_byte, "checksum"),
    (_foreign_header, "magic"),
    (_other_version, "version"),
    (lambda data: b"", "truncated"),
], ids=["truncated", "header-only", "flipped-byte", "foreign-header", "other-version", "empty"])
def test_a_damaged_entry_is_discarded_and_recompiled(cache, x, damage, reason):
    fn = chain(4.25)
    assert_equals_eager(fn, x)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    assert_equals_eager(fn, x)
    s = stats()
    assert (s["disk_rejected"], s["disk_hits"], s["misses"], s["disk_writes"]) == (1, 0, 1, 1)
    assert reason in s["last_rejection"]
    assert entry.read_bytes() == good, "the recompiled kernel's entry replaces the damaged one"


def test_an_entry_of_another_kernel_under_this_name_is_refused(cache, x):
    a, b = chain(5.0), chain(6.0)
    assert_equals_eager(a, x)
    assert_equals_eager(b, x)
    entry_a, entry_b = entries(cache)
    entry_b.write_bytes(entry_a.read_bytes())  # a's object under b's key (and the other way round, below)
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    assert_equals_eager(a, x)
    assert_equals_eager(b, x)
    s = stats()
    assert s["disk_rejected"] == 1 and s["misses"] == 1
    assert "another key" in s["last_rejection"]


def test_an_empty_cache_dir_turns_the_disk_cache_off(cache, x, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", "")
    assert_equals_eager(chain(7.0), x)
    s = stats()
    assert (s["misses"], s["disk_writes"], s["disk_write_errors"]) == (1, 0, 0)


def test_an_unwritable_cache_dir_counts_errors_and_still_compiles(cache, x, monkeypatch):
    blocker = cache / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KILN_CACHE_DIR", str(blocker))
    assert_equals_eager(chain(8.0), x)
    s = stats()
    assert (s["misses"], s["disk_writes"], s["disk_write_errors"]) == (1, 0, 1)


# Compiles N_KERNELS one-kernel functions and checks each against eager; prints the cache's counters.
WORKER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import kiln
    from kiln import _C
    start = float(sys.argv[1])
    while time.time() < start:  # both workers begin together
        time.sleep(0.001)
    x = kiln.from_numpy(np.linspace(-3, 3, 1003, dtype=np.float32))
    with kiln.no_grad():
        for i in range(N_KERNELS):
            fn = lambda x, c=1.0 + i / 8: ((x * c + 1.0).sin() - 0.25).relu() * 3.0
            np.testing.assert_array_equal(kiln.compile(fn)(x).numpy(), fn(x).numpy())
    s = _C._runtime.kernel_cache_stats()
    print(s["misses"], s["disk_hits"], s["disk_rejected"], s["disk_write_errors"])
""").replace("N_KERNELS", "12")


def test_two_processes_compiling_the_same_kernels_into_one_directory(cache):
    import time
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    start = str(time.time() + 4.0)  # after both have imported kiln
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, start], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [w.communicate(timeout=300) for w in workers]
    for w, (out, err) in zip(workers, results):
        assert w.returncode == 0, err
        misses, disk_hits, rejected, write_errors = map(int, out.split())
        assert misses + disk_hits == 12 and rejected == 0 and write_errors == 0, out
    assert len(entries(cache)) == 12
    assert not list((cache / "kernels").glob("*.tmp.*"))
    # A third process finds every entry whole.
    out = subprocess.run([sys.executable, "-c", WORKER, "0"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "12", "0", "0"]


# --- pruning (codegen/llvm/KernelCachePrune.h, Note [Pruning the kernel cache]) -----------------------------

HOUR = 3600


def _age(path: Path, seconds: float) -> None:
    """Sets the file's modification time `seconds` into the past."""
    import time
    t = time.time() - seconds
    os.utime(path, (t, t))


def _other_build(data: bytes) -> bytes:
    """The entry as another kiln build would have written it: its key text's environment differs."""
    text_bytes = struct.unpack_from("<Q", data, 24)[0]
    text = data[HEADER_BYTES:HEADER_BYTES + text_bytes]
    other = text.replace(b"build ", b"build X", 1)
    assert other != text
    header = bytearray(data[:HEADER_BYTES])
    struct.pack_into("<Q", header, 24, len(other))
    return bytes(header) + other + data[HEADER_BYTES + text_bytes:]


def test_prune_removes_other_builds_foreign_files_and_abandoned_temporaries(cache, x):
    for c in (11.0, 12.0, 13.0):
        assert_equals_eager(chain(c), x)
    mine = entries(cache)
    assert len(mine) == 3
    folder = cache / "kernels"
    (folder / "0123456789abcdef.kobj").write_bytes(_other_build(mine[0].read_bytes()))  # another kiln build
    (folder / "fedcba9876543210.kobj").write_bytes(_other_version(mine[1].read_bytes()))  # another entry format
    (folder / "notes.txt").write_text("not an entry")
    (folder / "0000000000000001.kobj.tmp.4242.0").write_bytes(b"half written")
    fresh_tmp = folder / "0000000000000002.kobj.tmp.4243.0"
    fresh_tmp.write_bytes(b"being written now")
    fresh_other = folder / "00000000000000aa.kobj"
    fresh_other.write_bytes(_other_build(mine[2].read_bytes()))  # another build using the directory now
    for p in folder.iterdir():
        if p != fresh_tmp and p != fresh_other and p not in mine:
            _age(p, 2 * HOUR)
    r = rt.prune_kernel_cache()
    assert (r["removed_foreign"], r["removed_temporary"], r["removed_over_cap"], r["kept"]) == (3, 1, 0, 3)
    assert sorted(folder.iterdir()) == sorted([*mine, fresh_tmp, fresh_other])
    assert r["kept_bytes"] == sum(p.stat().st_size for p in mine)
    # What is left still loads.
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    assert_equals_eager(chain(12.0), x)
    assert stats()["disk_hits"] == 1


def test_prune_to_a_size_cap_removes_the_least_recently_used(cache, x):
    fns = [chain(20.0 + i) for i in range(4)]
    for fn in fns:
        assert_equals_eager(fn, x)
    paths = entries(cache)
    for p in paths:
        _age(p, 2 * HOUR)
    # Loading an entry marks it used (its modification time is now).
    rt.forget_compiled_kernels()
    rt.reset_kernel_cache_stats()
    for fn in fns:
        assert_equals_eager(fn, x)
    assert stats()["disk_hits"] == 4
    import time
    assert all(p.stat().st_mtime > time.time() - HOUR for p in paths)
    for i, p in enumerate(paths):
        _age(p, (10 - i) * 60)  # paths[0] used longest ago
    cap = sum(p.stat().st_size for p in paths) - 1  # one entry over
    r = rt.prune_kernel_cache(max_bytes=cap)
    assert (r["removed_over_cap"], r["kept"]) == (1, 3)
    assert entries(cache) == paths[1:]
    assert r["kept_bytes"] <= cap
    assert rt.prune_kernel_cache(max_bytes=0)["removed_over_cap"] == 0  # 0: no cap


def test_a_process_adding_entries_prunes_its_directory_once(cache):
    """A fresh process's first store prunes the directory (an old build's entry goes); KILN_CACHE_MAX_BYTES caps it."""
    folder = cache / "kernels"
    folder.mkdir()
    stale = folder / "00000000000000bb.kobj"
    stale.write_bytes(b"KILNKOBJ" + b"\0" * 100)
    _age(stale, 2 * HOUR)
    env = dict(os.environ, KILN_CACHE_DIR=str(cache), KILN_CACHE_MAX_BYTES="1")
    out = subprocess.run([sys.executable, "-c", WORKER.replace("12", "3"), "0"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert not stale.exists()
    # The prune ran once, after the first store: the 1-byte cap removed that entry; the next two stay.
    assert len(entries(cache)) == 2
