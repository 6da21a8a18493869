"""Full sorts of rows of 64 or more elements (the radix path of
per_capability/SortKernel.cpp, Note [Radix sort keys]) against torch's stable sort:
every dtype, ties, NaN, signed zeros and infinities, descending, strided rows,
argsort, topk with k equal to the row length, and the gradient."""

import numpy as np
import pytest
import torch

import kiln
from nn_compare import close, exact
from torch_compare import kiln_dtype, torch_dtype

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]


def pair(values, dtype):
    t = torch.tensor(values, dtype=torch.float64).to(torch_dtype(dtype))
    k = kiln.tensor(values, dtype=kiln_dtype(dtype))
    return k, t


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [64, 257, 4096])
def test_long_rows_match_torch_stable(dtype, descending, n):
    rng = np.random.default_rng(n)
    if dtype == "bool":
        values = rng.integers(0, 2, size=(3, n))
    elif dtype in INTS:
        lo = 0 if dtype == "uint8" else -100
        values = rng.integers(lo, 100, size=(3, n))
    else:
        values = np.round(rng.standard_normal((3, n)) * 4) / 4  # many ties
    k, t = pair(values.astype(np.float64), dtype)
    kv, ki = kiln.sort(k, dim=1, descending=descending)
    tv, ti = torch.sort(t, dim=1, descending=descending, stable=True)
    exact(kv, tv)
    exact(ki, ti)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("descending", [False, True])
def test_specials_nan_zero_signs_infinities(dtype, descending):
    rng = np.random.default_rng(3)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, np.nan, 0.0, -0.0])
    values = np.concatenate([specials, rng.standard_normal(90), specials])
    rng.shuffle(values)
    k, t = pair(np.stack([values, values[::-1]]), dtype)
    kv, ki = kiln.sort(k, dim=-1, descending=descending)
    tv, ti = torch.sort(t, dim=-1, descending=descending, stable=True)
    exact(ki, ti)
    exact(kv, tv)
    # values are copied from the input, so -0.0 stays -0.0 where torch has it
    kf, tf = kv.float().numpy(), tv.float().numpy()
    numbers = ~np.isnan(tf)
    assert np.array_equal(np.signbit(kf[numbers]), np.signbit(tf[numbers]))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_strided_rows_and_outputs(dim):
    rng = np.random.default_rng(dim)
    values = np.round(rng.standard_normal((70, 66, 65)), 1)
    k = kiln.tensor(values, dtype=kiln.float32).permute(2, 0, 1)
    t = torch.tensor(values, dtype=torch.float32).permute(2, 0, 1)
    kv, ki = k.sort(dim=dim)
    tv, ti = t.sort(dim=dim, stable=True)
    exact(kv, tv)
    exact(ki, ti)
    exact(kiln.argsort(k, dim=dim, descending=True), torch.argsort(t, dim=dim, descending=True, stable=True))


def test_int64_extremes_and_msort():
    vals = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, 1] * 20
    k = kiln.tensor(vals, dtype=kiln.int64)
    t = torch.tensor(vals, dtype=torch.int64)
    for descending in (False, True):
        kv, ki = k.sort(descending=descending)
        tv, ti = t.sort(descending=descending, stable=True)
        exact(kv, tv)
        exact(ki, ti)
    exact(kiln.msort(k.reshape(10, 10)), torch.msort(t.reshape(10, 10)))


@pytest.mark.parametrize("largest", [False, True])
def test_topk_of_the_whole_row(largest):
    rng = np.random.default_rng(5)
    values = np.round(rng.standard_normal((4, 100)), 1)
    values[0, ::7] = np.nan
    k, t = pair(values, "float32")
    kv, ki = k.topk(100, dim=1, largest=largest)
    tv, ti = t.topk(100, dim=1, largest=largest)
    exact(kv, tv)
    exact(k.gather(1, ki), tv)


def test_gradient_through_long_rows():
    rng = np.random.default_rng(9)
    values = rng.standard_normal((5, 300))
    k = kiln.tensor(values, dtype=kiln.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    w = rng.standard_normal((5, 300))
    (k.sort(dim=1, descending=True).values * kiln.tensor(w)).sum().backward()
    (t.sort(dim=1, descending=True).values * torch.tensor(w)).sum().backward()
    close(k.grad, t.grad, rtol=0, atol=0)
