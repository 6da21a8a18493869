"""Contiguous-row max/min (per_capability/ReduceOpsKernel.cpp's extreme_span, Note
[NaN in a streamed max]): the vector loop keeps plain max/min accumulators and
a running sum that turns NaN when a NaN was read, so these tests put a NaN at
every kind of position (first vector, a loop step, the scalar tail), and feed
+inf with -inf and sums that overflow (the sum turns NaN or inf without any
NaN in the data), in float32, float64, float16 and bfloat16, against torch."""

import numpy as np
import pytest
import torch

import kiln
from nn_compare import close

DTYPES = [
    (kiln.float32, torch.float32),
    (kiln.float64, torch.float64),
    (kiln.float16, torch.float16),
    (kiln.bfloat16, torch.bfloat16),
]
OPS = ["amax", "amin", "max", "min"]


def reduce_both(op, k, t, dim=None):
    if dim is None:
        return getattr(kiln, op)(k), getattr(torch, op)(t)
    if op in ("max", "min"):
        return getattr(kiln, op)(k, dim).values, getattr(torch, op)(t, dim).values
    return getattr(kiln, op)(k, dim), getattr(torch, op)(t, dim)


@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: str(d[1]))
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("position", [0, 15, 63, 64, 200, 511, 999, 1000 + 13, 4095])
def test_one_nan_anywhere_in_a_long_row(dtypes, op, position):
    kd, td = dtypes
    values = np.random.default_rng(position).standard_normal(4096)
    values[position] = np.nan
    k, t = kiln.tensor(values, dtype=kd), torch.tensor(values, dtype=td)
    close(*reduce_both(op, k, t), rtol=0, atol=0)


@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: str(d[1]))
@pytest.mark.parametrize("op", OPS)
def test_plus_and_minus_inf_without_nan(dtypes, op):
    kd, td = dtypes
    values = np.random.default_rng(1).standard_normal(3000)
    values[100], values[2000] = np.inf, -np.inf
    k, t = kiln.tensor(values, dtype=kd), torch.tensor(values, dtype=td)
    got, want = reduce_both(op, k, t)
    close(got, want, rtol=0, atol=0)
    assert not torch.isnan(torch.tensor(got.tolist()))


@pytest.mark.parametrize("dtypes", DTYPES[:2], ids=lambda d: str(d[1]))
@pytest.mark.parametrize("op", OPS)
def test_values_whose_sum_overflows(dtypes, op):
    kd, td = dtypes
    big = float(torch.finfo(td).max) / 2
    values = np.where(np.arange(2048) % 2 == 0, big, -big)
    values[7] = 1.0
    k, t = kiln.tensor(values, dtype=kd), torch.tensor(values, dtype=td)
    close(*reduce_both(op, k, t), rtol=0, atol=0)


@pytest.mark.parametrize("op", OPS)
def test_rows_along_the_last_dim_each_with_or_without_nan(op):
    values = np.random.default_rng(2).standard_normal((6, 777))
    values[1, 0] = np.nan
    values[3, 776] = np.nan
    values[4, 400] = np.inf
    values[4, 401] = -np.inf
    for kd, td in DTYPES[:2]:
        k, t = kiln.tensor(values, dtype=kd), torch.tensor(values, dtype=td)
        close(*reduce_both(op, k, t, dim=1), rtol=0, atol=0)


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_a_nan_in_a_16m_row_split_across_threads(op):
    values = np.random.default_rng(3).standard_normal(1 << 22).astype(np.float32)
    values[(1 << 21) + 5] = np.nan
    k, t = kiln.tensor(values), torch.tensor(values)
    for threads in (1, 2):
        previous = kiln.get_num_threads()
        kiln.set_num_threads(threads)
        try:
            close(*reduce_both(op, k, t), rtol=0, atol=0)
        finally:
            kiln.set_num_threads(previous)
