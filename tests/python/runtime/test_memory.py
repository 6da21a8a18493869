"""The CPU caching allocator as Python sees it: no OS calls in steady state, statistics,
empty_cache, peaks, and KILN_NO_MEMORY_CACHING."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln

MiB = 1 << 20
BIG = 16 * 1024 * 1024  # float32 elements: 64 MiB


def stat(name: str) -> int:
    return kiln.memory_stats()[name]


@pytest.fixture(scope="module", autouse=True)
def frozen_heap():
    """Collections here scan only this module's objects: what exists before is frozen."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def collect_garbage_first():
    """Tensors earlier tests left in reference cycles must not be freed mid-measurement."""
    gc.collect()


def test_steady_state_loop_makes_no_os_allocations():
    """The done criterion: after its first iteration, a loop that allocates and frees
    64 MiB tensors is served from the cache."""
    counts = []
    for _ in range(10):
        t = kiln.empty(BIG)
        assert t.nbytes == 64 * MiB
        del t
        counts.append(stat("num_device_alloc"))
    assert counts[1:] == [counts[0]] * 9, counts


def test_steady_state_mixed_sizes():
    sizes = [BIG, 1000, 3 * MiB // 4, 5 * MiB // 4, 300_000]
    for _ in range(2):  # warm the cache with every size
        tensors = [kiln.empty(n) for n in sizes]
        del tensors
    before = stat("num_device_alloc")
    for _ in range(5):
        tensors = [kiln.empty(n) for n in sizes]
        views = [t.view(-1)[1:] for t in tensors]
        del tensors, views
    assert stat("num_device_alloc") == before


EXPECTED_KEYS = [
    f"{kind}.all.{field}"
    for kind in ("allocated_bytes", "reserved_bytes", "active_bytes", "allocation", "segment")
    for field in ("current", "peak", "allocated", "freed")
] + ["num_device_alloc", "num_device_free", "num_alloc_retries", "num_ooms"]


def test_memory_stats_keys_and_values():
    stats = kiln.memory_stats()
    assert set(EXPECTED_KEYS) <= set(stats)
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())
    assert stats["allocated_bytes.all.current"] <= stats["reserved_bytes.all.current"]
    assert stats["allocated_bytes.all.current"] <= stats["allocated_bytes.all.peak"]


@pytest.mark.parametrize(
    "numel,dtype,rounded",
    [(1000, kiln.float32, 4096), (1, kiln.uint8, 512), (512, kiln.int8, 512), (BIG, kiln.float32, 64 * MiB),
     (3 * MiB, kiln.int16, 6 * MiB)],
)
def test_allocated_bytes_follow_tensors(numel, dtype, rounded):
    before = stat("allocated_bytes.all.current")
    allocations = stat("allocation.all.current")
    t = kiln.empty(numel, dtype=dtype)
    assert stat("allocated_bytes.all.current") - before == rounded
    assert stat("allocation.all.current") - allocations == 1
    view, array = t[1:], t.numpy()
    del t
    assert stat("allocated_bytes.all.current") - before == rounded  # the view and the array hold it
    del view
    assert stat("allocated_bytes.all.current") - before == rounded
    del array
    gc.collect()
    assert stat("allocated_bytes.all.current") == before


def test_zero_size_tensors_allocate_nothing():
    before = kiln.memory_stats()
    t = kiln.empty(0, 5)
    after = kiln.memory_stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert after["num_device_alloc"] == before["num_device_alloc"]
    del t


def test_empty_cache_releases_reserved_memory():
    t = kiln.empty(BIG)
    del t
    reserved = stat("reserved_bytes.all.current")
    frees = stat("num_device_free")
    assert reserved >= 64 * MiB
    kiln.empty_cache()
    assert stat("reserved_bytes.all.current") <= reserved - 64 * MiB
    assert stat("num_device_free") > frees
    # The next allocation goes to the OS again.
    allocations = stat("num_device_alloc")
    t = kiln.empty(BIG)
    assert stat("num_device_alloc") == allocations + 1
    del t


def test_empty_cache_keeps_live_tensors():
    t = kiln.full((BIG,), 3.0)
    kiln.empty_cache()
    assert stat("reserved_bytes.all.current") >= 64 * MiB
    assert t[BIG - 1].item() == 3.0
    del t


def test_peak_and_reset():
    kiln.reset_peak_memory_stats()
    start = stat("allocated_bytes.all.current")
    assert stat("allocated_bytes.all.peak") == start
    t = kiln.empty(2 * BIG)  # 128 MiB
    del t
    assert stat("allocated_bytes.all.peak") >= start + 128 * MiB
    assert stat("allocated_bytes.all.current") == start
    assert stat("reserved_bytes.all.peak") >= 128 * MiB
    kiln.reset_peak_memory_stats()
    stats = kiln.memory_stats()
    assert stats["allocated_bytes.all.peak"] == stats["allocated_bytes.all.current"] == start
    assert stats["reserved_bytes.all.peak"] == stats["reserved_bytes.all.current"]
    # Totals are not peaks: reset leaves them alone.
    assert stats["allocated_bytes.all.allocated"] >= 128 * MiB


def test_foreign_memory_is_not_counted():
    before = kiln.memory_stats()
    array = np.zeros(BIG // 4, np.float32)
    t = kiln.from_numpy(array)
    after = kiln.memory_stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert after["num_device_alloc"] == before["num_device_alloc"]
    del t, array


NO_CACHING_SCRIPT = textwrap.dedent(
    """
    import kiln
    stats = kiln.memory_stats
    start = stats()["num_device_alloc"]
    for i in range(5):
        t = kiln.empty(1000)
        del t
    t = kiln.empty(16 * 1024 * 1024)
    del t
    s = stats()
    print(s["num_device_alloc"] - start, s["num_device_free"], s["reserved_bytes.all.current"],
          s["allocated_bytes.all.current"])
    print("off (KILN_NO_MEMORY_CACHING)" in kiln.show_config(print_out=False))
    """
)


@pytest.mark.parametrize("value,cached", [("1", False), ("0", True)])
def test_no_memory_caching_env(value, cached):
    env = dict(os.environ, KILN_NO_MEMORY_CACHING=value)
    out = subprocess.run([sys.executable, "-c", NO_CACHING_SCRIPT], env=env, capture_output=True, text=True,
                         check=True, timeout=60)
    counts, config_says_off = out.stdout.split("\n")[:2]
    allocations, frees, reserved, allocated = map(int, counts.split())
    assert allocated == 0
    if cached:
        assert allocations == 2 and frees == 0 and reserved > 0  # one small and one large segment
        assert config_says_off == "False"
    else:
        assert allocations == 6 and frees == 6 and reserved == 0  # every allocation is an OS call
        assert config_says_off == "True"


def test_thread_count_is_settable_and_checked():
    import kiln

    before = kiln.get_num_threads()
    try:
        kiln.set_num_threads(1)
        assert kiln.get_num_threads() == 1
        with pytest.raises(RuntimeError, match="positive"):
            kiln.set_num_threads(0)
    finally:
        kiln.set_num_threads(before)


def test_cpp_warnings_reach_python_warnings():
    import warnings

    import kiln

    out = kiln.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kiln.add(kiln.ones(3), kiln.ones(3), out=out)
    assert any("An output with one or more elements was resized" in str(w.message) for w in caught)
    assert out.shape == (3,)
