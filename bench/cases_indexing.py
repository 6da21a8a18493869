"""Indexing: x[i], x[a:b] (per-call cost of basic indexing, a view), x[mask],
x[idx_tensor], x[idx] = v, index_select, gather, scatter_add, scatter_reduce and nonzero on a
1M-element float32 tensor (bandwidth and index-bound work).

kiln is imported inside each case's setup, never at module import. The small
cases use argument-free closures (Case.make) so the loop adds nothing but the call.
"""

from __future__ import annotations

from harness import Case

ROWS, COLS = 1024, 1024  # 1M float32 elements, 4 MiB
N_INDEX = 4096  # rows picked by the index cases


def _libs():
    import numpy
    import torch

    import kiln

    return kiln, torch, numpy


def _pair(np_array):
    kiln, torch, _ = _libs()
    return kiln.from_numpy(np_array.copy()), torch.from_numpy(np_array.copy())


def _data():
    _, _, np = _libs()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    rows = rng.integers(0, ROWS, N_INDEX)
    cols = rng.integers(0, COLS, (ROWS, 8))
    mask = rng.random((ROWS, COLS)) < 0.5
    return np, x, rows, cols, mask


def _int_index():
    _, _, np = _libs()
    kx, tx = _pair(np.zeros((64, 64), np.float32))
    return (lambda: kx[3]), (lambda: tx[3])


def _slice_index():
    _, _, np = _libs()
    kx, tx = _pair(np.zeros((64, 64), np.float32))
    return (lambda: kx[2:40]), (lambda: tx[2:40])


def _tuple_index():
    _, _, np = _libs()
    kx, tx = _pair(np.zeros((8, 8, 8), np.float32))
    return (lambda: kx[1, :, None, 2:5]), (lambda: tx[1, :, None, 2:5])


def _small_tensor_index():
    _, _, np = _libs()
    kx, tx = _pair(np.zeros((64, 64), np.float32))
    ki, ti = _pair(np.array([1, 5, 9]))
    return (lambda: kx[ki]), (lambda: tx[ti])


def _large(kind: str):
    """A setup for the 1M-element cases: (kiln inputs, torch inputs) as tuples."""

    def setup():
        np, x, rows, cols, mask = _data()
        kx, tx = _pair(x)
        kr, tr = _pair(rows)
        kc, tc = _pair(cols)
        km, tm = _pair(mask)
        kv, tv = _pair(np.ones((N_INDEX, COLS), np.float32))
        return {"kiln": (kx, kr, kc, km, kv), "torch": (tx, tr, tc, tm, tv)}

    return setup


def _case(name, fn):
    return Case(name, lambda s: fn(*s["kiln"]), lambda s: fn(*s["torch"]), setup=_large(name), group="indexing")


def _setitem(x, rows, cols, mask, values):
    x[rows] = values


def _accumulate(x, rows, cols, mask, values):
    x.index_put_((rows,), values, accumulate=True)


def cases() -> list[Case]:
    return [
        Case("x[3] (view) 64x64", make=_int_index, group="indexing"),
        Case("x[2:40] (view) 64x64", make=_slice_index, group="indexing"),
        Case("x[1, :, None, 2:5] (view) 8x8x8", make=_tuple_index, group="indexing"),
        Case("x[idx] 3 rows of 64x64", make=_small_tensor_index, group="indexing"),
        _case(f"x[idx] {N_INDEX} rows of 1Mx f32", lambda x, r, c, m, v: x[r]),
        _case("x[:, idx] 4096 cols", lambda x, r, c, m, v: x[:, r]),
        _case("x[mask] 1M f32 (50%)", lambda x, r, c, m, v: x[m]),
        _case(f"index_select(0) {N_INDEX} rows", lambda x, r, c, m, v: x.index_select(0, r)),
        _case("index_select(1) 4096 cols", lambda x, r, c, m, v: x.index_select(1, r)),
        _case("gather(1) 1024x8", lambda x, r, c, m, v: x.gather(1, c)),
        _case(f"x[idx] = v {N_INDEX} rows", _setitem),
        _case(f"index_put_ accumulate {N_INDEX} rows", _accumulate),
        _case("scatter_add(1) 1024x8", lambda x, r, c, m, v: x.scatter_add(1, c, x[:, :8])),
        _case("scatter_reduce(1) amax 1024x8", lambda x, r, c, m, v: x.scatter_reduce(1, c, x[:, :8], "amax")),
        _case("scatter_reduce(1) mean 1024x8", lambda x, r, c, m, v: x.scatter_reduce(1, c, x[:, :8], "mean")),
        _case("nonzero 1M (50%)", lambda x, r, c, m, v: m.nonzero()),
    ]
