"""Across-rows max/min (per_capability/ReduceOpsKernel.cpp's extreme_columns, four
rows combined in registers): amax/amin/max/min over a dim whose rows are
strided in memory, row counts around multiples of four, NaN in any of the
four, integer dtypes, widths around the vector width, against torch."""

import numpy as np
import pytest
import torch

import kiln
from nn_compare import close


def pair(values, kdtype, tdtype):
    return kiln.tensor(values, dtype=kdtype), torch.tensor(values, dtype=tdtype)


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 9, 67])
@pytest.mark.parametrize("width", [1, 15, 16, 33, 130])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_across_rows_with_nan(rows, width, op):
    rng = np.random.default_rng(rows * 1000 + width)
    values = rng.standard_normal((rows, width))
    values[rng.random((rows, width)) < 0.05] = np.nan
    values[rows - 1, width // 2] = np.nan  # a NaN in the last (tail) row
    k, t = pair(values, kiln.float32, torch.float32)
    close(getattr(kiln, op)(k, 0), getattr(torch, op)(t, 0), rtol=0, atol=0)
    # the transposed view: dim 1 of the transpose reads across rows
    close(getattr(kiln, op)(k.transpose(0, 1), 1), getattr(torch, op)(t.transpose(0, 1), 1), rtol=0, atol=0)


@pytest.mark.parametrize("nan_row", [0, 1, 2, 3, 4])
def test_a_nan_in_each_position_of_a_four_row_group(nan_row):
    values = np.arange(5 * 20, dtype=np.float64).reshape(5, 20)
    values[nan_row, 3] = np.nan
    for kd, td in ((kiln.float32, torch.float32), (kiln.float64, torch.float64)):
        k, t = pair(values, kd, td)
        close(kiln.amax(k, 0), torch.amax(t, 0), rtol=0, atol=0)
        close(kiln.amin(k, 0), torch.amin(t, 0), rtol=0, atol=0)
        close(k.max(0).values, t.max(0).values, rtol=0, atol=0)


@pytest.mark.parametrize("kd,td", [(kiln.int32, torch.int32), (kiln.int64, torch.int64), (kiln.uint8, torch.uint8)])
def test_integers_across_rows(kd, td):
    rng = np.random.default_rng(4)
    values = rng.integers(0, 200, size=(37, 50))
    k, t = pair(values, kd, td)
    close(kiln.amax(k, 0), torch.amax(t, 0), rtol=0, atol=0)
    close(kiln.amin(k.transpose(0, 1), 1), torch.amin(t.transpose(0, 1), 1), rtol=0, atol=0)


def test_large_transposed_on_two_threads():
    previous = kiln.get_num_threads()
    kiln.set_num_threads(2)
    try:
        rng = np.random.default_rng(8)
        values = rng.standard_normal((1030, 1100)).astype(np.float32)
        values[517, 333] = np.nan
        k, t = pair(values, kiln.float32, torch.float32)
        close(kiln.amax(k.transpose(0, 1), 1), torch.amax(t.transpose(0, 1), 1), rtol=0, atol=0)
        close(kiln.amin(k, 0, keepdim=True), torch.amin(t, 0, keepdim=True), rtol=0, atol=0)
    finally:
        kiln.set_num_threads(previous)


@pytest.mark.parametrize("rows", [3, 4, 7, 1025, 2051])
@pytest.mark.parametrize("width", [5, 16, 70])
def test_sum_and_mean_across_rows(rows, width):
    # sum_columns adds four rows in registers, in blocks of 1024 rows
    rng = np.random.default_rng(rows + width)
    values = rng.standard_normal((rows, width))
    for kd, td, tol in ((kiln.float32, torch.float32, 1e-5), (kiln.float64, torch.float64, 1e-12)):
        k, t = pair(values, kd, td)
        close(kiln.sum(k, 0), torch.sum(t, 0), rtol=tol, atol=tol * rows ** 0.5)
        close(kiln.mean(k.transpose(0, 1), 1), torch.mean(t.transpose(0, 1), 1), rtol=tol, atol=tol)
    ints = rng.integers(-1000, 1000, size=(rows, width))
    k, t = pair(ints, kiln.int64, torch.int64)
    close(kiln.sum(k, 0), torch.sum(t, 0), rtol=0, atol=0)
    k, t = pair(ints, kiln.int32, torch.int32)
    close(kiln.sum(k.transpose(0, 1), 1), torch.sum(t.transpose(0, 1), 1), rtol=0, atol=0)
