"""The gather loops' fast paths against torch (eager/kernels/cpu/indexing/per_capability/IndexKernel.cpp):
rows sharing one index run (index_select and x[:, idx] along the last dim), blocks of
short rows whose indices are checked at once (gather along the last dim), each over
element widths 1 to 8, int32 and int64 indices, negative indices where torch takes
them, and an out-of-range index anywhere in the run raising torch's error with
nothing written."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure, assert_same_outcome
from torch_compare import raised

DTYPES = ["int8", "int16", "float32", "float64"]
INDEX_DTYPES = ["int32", "int64"]


def _pair(array):
    return kiln.from_numpy(array.copy()), torch.from_numpy(array.copy())


def _source(dtype, rows, cols):
    rng = np.random.default_rng(rows * 31 + cols)
    return (rng.standard_normal((rows, cols)) * 50).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("rows", [1, 3, 4, 7, 64])
def test_index_select_last_dim_shares_one_checked_run(dtype, index_dtype, rows):
    kx, tx = _pair(_source(dtype, rows, 50))
    index = np.random.default_rng(rows).integers(0, 50, 300).astype(index_dtype)
    ki, ti = _pair(index)
    assert_matches(kx.index_select(1, ki), tx.index_select(1, ti), exact=True)
    assert_matches(kx[:, ki], tx[:, ti], exact=True)
    negative = index - 50
    kn, tn = _pair(negative)
    assert_matches(kx[:, kn], tx[:, tn], exact=True)


@pytest.mark.parametrize("position", [0, 150, 299])
@pytest.mark.parametrize("bad", [50, 1000, -51])
def test_index_select_last_dim_rejects_a_bad_index_anywhere(position, bad):
    kx, tx = _pair(_source("float32", 8, 50))
    before = kx.clone()
    index = np.random.default_rng(position).integers(0, 50, 300)
    index[position] = bad
    ki, ti = _pair(index)
    # torch's fbgemm loop words this one its own way (test_indexing_ops.py); kiln keeps IndexError
    with pytest.raises(IndexError, match="^index out of range in self$"):
        kx.index_select(1, ki)
    assert raised(lambda: tx.index_select(1, ti)) is not None
    assert_same_failure(raised(lambda: kx[:, ki]), raised(lambda: tx[:, ti]))
    assert_matches(kx, torch.from_numpy(before.numpy()), exact=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("shape", [(1024, 8), (5, 3), (64, 1), (2, 130)])
def test_gather_last_dim_blocks(dtype, index_dtype, shape):
    kx, tx = _pair(_source(dtype, shape[0], 40))
    index = np.random.default_rng(shape[1]).integers(0, 40, shape).astype(index_dtype)
    ki, ti = _pair(index)
    assert_matches(kx.gather(1, ki), tx.gather(1, ti), exact=True)
    # (torch's take_along_dim takes int64 indices only: the int32 case compares the error)
    assert_same_outcome(lambda: kiln.take_along_dim(kx, ki, 1), lambda: torch.take_along_dim(tx, ti, 1), exact=True)


@pytest.mark.parametrize("where", [(0, 0), (511, 3), (1023, 7)])
@pytest.mark.parametrize("bad", [40, -1])
def test_gather_last_dim_rejects_a_bad_index_in_any_row(where, bad):
    kx, tx = _pair(_source("float32", 1024, 40))
    index = np.random.default_rng(1).integers(0, 40, (1024, 8))
    index[where] = bad
    ki, ti = _pair(index)
    assert_same_failure(raised(lambda: kx.gather(1, ki)), raised(lambda: tx.gather(1, ti)))


def test_gather_of_a_non_contiguous_index_takes_the_row_loop():
    kx, tx = _pair(_source("float32", 16, 40))
    index = np.random.default_rng(2).integers(0, 40, (8, 16))
    ki, ti = _pair(index)
    assert_matches(kx.gather(1, ki.t()), tx.gather(1, ti.t()), exact=True)
    assert_matches(kx.gather(1, ki.t()[:, ::2]), tx.gather(1, ti.t()[:, ::2]), exact=True)


# --- puts through one index (scatter, scatter_add: run_put_direct) ---------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_scatter_family_matches_torch(dtype, index_dtype):
    kx, tx = _pair(_source(dtype, 6, 9))
    index = np.random.default_rng(4).integers(0, 9, (6, 4)).astype(index_dtype)
    ki, ti = _pair(index)
    ks, ts = _pair(_source(dtype, 6, 4))
    assert_matches(kx.scatter_add(1, ki, ks), tx.scatter_add(1, ti, ts), exact=dtype.startswith("int"))
    assert_matches(kx.scatter(1, ki, ks), tx.scatter(1, ti, ts), exact=True)
    assert_matches(kx.scatter(1, ki.t().contiguous().t(), ks), tx.scatter(1, ti.t().contiguous().t(), ts), exact=True)
    k, t = kx.clone(), tx.clone()
    rows_k, rows_t = _pair((index[:2] % 6).copy())
    k.scatter_(0, rows_k, ks[:2], reduce="multiply")
    t.scatter_(0, rows_t, ts[:2], reduce="multiply")
    assert_matches(k, t, exact=dtype.startswith("int"))


@pytest.mark.parametrize("where", [(0, 0), (5, 3)])
def test_scatter_with_a_bad_index_writes_nothing(where):
    kx, tx = _pair(_source("float32", 6, 9))
    before = kx.clone()
    index = np.random.default_rng(5).integers(0, 9, (6, 4))
    index[where] = 9
    ki, ti = _pair(index)
    ks, ts = _pair(_source("float32", 6, 4))
    assert_same_failure(raised(lambda: kx.scatter_add_(1, ki, ks)), raised(lambda: tx.scatter_add_(1, ti, ts)))
    assert_same_failure(raised(lambda: kx.scatter_(1, ki, ks)), raised(lambda: tx.scatter_(1, ti, ts)))
    assert_matches(kx, torch.from_numpy(before.numpy()), exact=True)
