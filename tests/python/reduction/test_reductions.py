"""Reductions and scans against torch: one table of ops, run over every dtype
and a table of layouts (contiguous, transposed, strided, expanded, zero-size,
0-dim, large enough for the chunked full reduction) and dim choices (None,
int, negative, tuple, keepdim). Values, shapes and dtypes are compared, index
results exactly; then gradients vs torch and gradcheck, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerances import tolerance
from torch_compare import DTYPE_NAMES, assert_same_error, kiln_dtype, raised, torch_dtype

FLOATS = ("float32", "float64", "float16", "bfloat16")

# name -> (fn(lib, x), float only?)
OPS = {
    "sum": (lambda L, x: x.sum(), False),
    "sum dim": (lambda L, x: x.sum(-1), False),
    "sum dims keepdim": (lambda L, x: L.sum(x, (0, -1), keepdim=True), False),
    "sum dtype": (lambda L, x: x.sum(0, dtype=L.float64), False),
    "mean": (lambda L, x: x.mean(), True),
    "mean dims": (lambda L, x: x.mean((0, 1)), True),
    "prod": (lambda L, x: x.prod(), False),
    "prod dim": (lambda L, x: x.prod(1, keepdim=True), False),
    "amax": (lambda L, x: x.amax(-1), False),
    "amin dims": (lambda L, x: L.amin(x, (0, 1), keepdim=True), False),
    "max": (lambda L, x: x.max(), False),
    "max dim": (lambda L, x: tuple(x.max(1)), False),
    "min dim keepdim": (lambda L, x: tuple(L.min(x, 0, keepdim=True)), False),
    "argmax": (lambda L, x: x.argmax(), False),
    "argmax dim": (lambda L, x: x.argmax(-1), False),
    "argmin dim keepdim": (lambda L, x: L.argmin(x, 0, keepdim=True), False),
    "all": (lambda L, x: x.all(), False),
    "any dim": (lambda L, x: x.any(1), False),
    "var": (lambda L, x: x.var(), True),
    "var dim unbiased=False": (lambda L, x: x.var(1, unbiased=False), True),
    "var correction": (lambda L, x: L.var(x, dim=(0, 1), correction=0, keepdim=True), True),
    "std dim": (lambda L, x: x.std(0), True),
    "logsumexp": (lambda L, x: L.logsumexp(x, 1), True),
    "nansum": (lambda L, x: L.nansum(x, 0), True),
    "cumsum": (lambda L, x: x.cumsum(1), False),
    "cumsum dim 0": (lambda L, x: L.cumsum(x, 0), False),
    "cumprod": (lambda L, x: x.cumprod(-1), False),
}

# Layouts (all 3-D so every op's dims exist): name -> fn(lib tensor 3-D base) -> view
LAYOUTS = {
    "contiguous": (lambda t: t),
    "transposed": (lambda t: t.transpose(0, 2)),
    "strided": (lambda t: t[:, ::2, 1:]),
    "expanded": (lambda t: t[:, :1].expand(-1, 3, -1)),
}
BASE_SHAPE = (4, 5, 6)

ARGLESS_INDEX_OPS = ("argmax", "argmax dim", "argmin dim keepdim", "max dim", "min dim keepdim")


def _values(dtype: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in FLOATS:
        # distinct values (no ties for arg ops in low precision), near 1 so products stay finite
        return rng.permutation(np.prod(shape)).reshape(shape) / np.prod(shape) + 0.5
    return rng.integers(0 if dtype == "uint8" else -3, 4, size=shape)


def _tensors(dtype: str, array):
    k = kiln.tensor(array, dtype=kiln_dtype(dtype))
    t = torch.tensor(array).to(torch_dtype(dtype))
    return k, t


def _compare(k_out, t_out, dtype: str, name: str):
    ks = k_out if isinstance(k_out, tuple) else (k_out,)
    ts = t_out if isinstance(t_out, tuple) else (t_out,)
    assert len(ks) == len(ts)
    for k, t in zip(ks, ts):
        assert tuple(k.shape) == tuple(t.shape)
        assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
        got = torch.tensor(np.array(k.tolist())).to(t.dtype) if k.numel() else torch.empty(t.shape, dtype=t.dtype)
        if t.dtype.is_floating_point:
            torch.testing.assert_close(got, t, **tolerance(str(t.dtype), name.split()[0]), equal_nan=True)
        else:
            assert torch.equal(got, t), (got, t)


def _cases():
    for name, (_, float_only) in OPS.items():
        for dtype in DTYPE_NAMES:
            if float_only and dtype not in FLOATS:
                continue
            for layout in LAYOUTS:
                yield name, dtype, layout


@pytest.mark.parametrize("name,dtype,layout", list(_cases()))
def test_reduction_matches_torch(name, dtype, layout):
    fn, _ = OPS[name]
    k, t = _tensors(dtype, _values(dtype, BASE_SHAPE, len(name)))
    k, t = LAYOUTS[layout](k), LAYOUTS[layout](t)
    t_error = raised(lambda: fn(torch, t))
    if t_error is not None:
        assert_same_error(lambda: fn(kiln, k), lambda: fn(torch, t), message=False)
        return
    _compare(fn(kiln, k), fn(torch, t), dtype, name)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("shape", [(), (0, 3, 2), (3, 0, 2), (1, 1, 1)])
def test_reduction_of_zero_size_and_0_dim_inputs(name, shape):
    fn, _ = OPS[name]
    k, t = _tensors("float32", _values("float32", shape, 3) if shape else np.array(1.5))
    if raised(lambda: fn(torch, t)) is not None:
        assert_same_error(lambda: fn(kiln, k), lambda: fn(torch, t))
        return
    _compare(fn(kiln, k), fn(torch, t), "float32", name)


def test_float32_sum_of_16m_elements_is_as_accurate_as_torch():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, size=1 << 24).astype(np.float32)
    exact = a.astype(np.float64).sum()
    k_err = abs(float(kiln.from_numpy(a).sum()) - exact)
    t_err = abs(float(torch.from_numpy(a).sum()) - exact)
    assert k_err <= max(t_err * 2, 1e-3 * 1), (k_err, t_err)


def test_big_reductions_do_not_depend_on_the_thread_count():
    a = kiln.from_numpy(np.random.default_rng(1).standard_normal(3_000_000).astype(np.float32))
    before = kiln.get_num_threads()
    try:
        kiln.set_num_threads(1)
        one = [a.sum().item(), a.view(1000, 3000).sum(1).numpy().copy(), a.amax().item()]
        kiln.set_num_threads(2)
        two = [a.sum().item(), a.view(1000, 3000).sum(1).numpy().copy(), a.amax().item()]
    finally:
        kiln.set_num_threads(before)
    assert one[0] == two[0] and one[2] == two[2]
    assert np.array_equal(one[1], two[1])


def test_nan_propagation_and_first_index_on_ties():
    values = [[1.0, float("nan"), 3.0, 3.0], [2.0, 2.0, 0.0, 2.0]]
    k, t = kiln.tensor(values), torch.tensor(values)
    for fn in (lambda L, x: x.amax(1), lambda L, x: x.argmax(1), lambda L, x: x.argmin(1),
               lambda L, x: tuple(x.max(1)), lambda L, x: x.max()):
        _compare(fn(kiln, k), fn(torch, t), "float32", "nan")


# Note [Reductions as rows]: a dense input reduces in place as a [batch, len, inner]
# block (rows, or across rows with the inner dim vectorised); the others are copied.
# These layouts and dim sets reach every plan, with sizes past the vector widths
# and the column pieces of the across-rows loop (one per thread, at most 4096 wide).
PLAN_LAYOUTS = {
    "contiguous": (lambda t: t),
    "last two transposed": (lambda t: t.transpose(1, 2)),
    "permuted": (lambda t: t.permute(2, 0, 1)),
    "reversed": (lambda t: t.permute(2, 1, 0)),
    "sliced": (lambda t: t[:, 1:]),
}
PLAN_DIMS = [None, 0, 1, 2, (0, 1), (1, 2), (0, 2), (0, 1, 2)]
PLAN_OPS = {
    "sum": (lambda L, x, d: x.sum() if d is None else x.sum(d)),
    "amax": (lambda L, x, d: x.amax() if d is None else x.amax(d)),
    "amin keepdim": (lambda L, x, d: L.amin(x, () if d is None else d, keepdim=True)),
    "prod": (lambda L, x, d: (x / 2 + 0.75).prod() if d is None or not isinstance(d, int)
             else (x / 2 + 0.75).prod(d)),
    "var": (lambda L, x, d: L.var(x, d)),
    "all": (lambda L, x, d: (x > -2.5).all() if not isinstance(d, int) else (x > -2.5).all(d)),
    "any": (lambda L, x, d: (x > 2.5).any() if not isinstance(d, int) else (x > 2.5).any(d)),
    "argmax": (lambda L, x, d: x.argmax() if not isinstance(d, int) else x.argmax(d)),
    "min dim": (lambda L, x, d: tuple(L.min(x, 0 if not isinstance(d, int) else d))),
}


# var has no integer form (its error is compared above) and prod's input is a float
# expression of x, so neither has an int64 case.
PLAN_CASES = [(name, dtype) for name in PLAN_OPS for dtype in ("float32", "int64")
              if dtype == "float32" or name not in ("var", "prod")]


@pytest.mark.parametrize("layout", list(PLAN_LAYOUTS))
@pytest.mark.parametrize("name,dtype", PLAN_CASES)
def test_every_reduction_plan_matches_torch(name, dtype, layout):
    fn = PLAN_OPS[name]
    rng = np.random.default_rng(7)
    shape = (3, 37, 4200)  # 4200 > one 4096-column piece; 37 rows; 3 outer
    if dtype == "float32":
        a = (rng.standard_normal(shape) + 2).astype(np.float32)  # offset: sums well conditioned
    else:
        a = rng.integers(-3, 4, size=shape)  # many ties: the first index must win
    k, t = _tensors(dtype, a)
    k, t = PLAN_LAYOUTS[layout](k), PLAN_LAYOUTS[layout](t)
    for d in PLAN_DIMS:
        expected = fn(torch, t, d)
        if dtype == "float32":
            # Sums of ~10^5 floats: the reference is the float64 result (kiln sums float32 in
            # double, torch in float32: both within float32 tolerance of the truth, not of each other).
            exact = fn(torch, t.double(), d)
            expected = tuple(e.float() if e.is_floating_point() else e for e in exact) if isinstance(
                exact, tuple) else (exact.float() if exact.is_floating_point() else exact)
        _compare(fn(kiln, k, d), expected, dtype, name)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_nan_propagates_through_every_plan(layout):
    a = np.random.default_rng(3).standard_normal((40, 600)).astype(np.float32)
    a[5, 7] = a[30, 7] = a[12, 599] = np.nan
    k, t = _tensors("float32", a)
    if layout == "transposed":
        k, t = k.t(), t.t()
    for fn in (lambda L, x: x.amax(0), lambda L, x: x.amax(1), lambda L, x: x.amin(0), lambda L, x: x.amax(),
               lambda L, x: tuple(x.max(0)), lambda L, x: tuple(x.min(1)), lambda L, x: x.argmax(0),
               lambda L, x: x.argmin(1), lambda L, x: x.sum(0), lambda L, x: x.var(1)):
        _compare(fn(kiln, k), fn(torch, t), "float32", "nan")


def test_long_rows_split_in_chunks_match_torch():
    a = np.random.default_rng(4).standard_normal(200_003).astype(np.float64)
    a[150_000] = 99.0
    k, t = _tensors("float64", a)
    for fn in (lambda L, x: x.sum(), lambda L, x: x.amax(), lambda L, x: x.amin(), lambda L, x: (x > -9).all(),
               lambda L, x: (x > 9).any(), lambda L, x: (x / 1000 + 1).prod(), lambda L, x: x.argmax()):
        _compare(fn(kiln, k), fn(torch, t), "float64", "long")


def test_max_dim_returns_a_named_tuple():
    x = kiln.tensor([[1.0, 5.0], [3.0, 2.0]])
    r = x.max(1)
    assert r.values.tolist() == [5.0, 3.0] and r.indices.tolist() == [1, 0]
    values, indices = kiln.min(x, 0)
    assert values.tolist() == [1.0, 2.0] and indices.tolist() == [0, 1]
    assert kiln.max(x, kiln.zeros(2, 2) + 4).tolist() == [[4.0, 5.0], [4.0, 4.0]]


@pytest.mark.parametrize("fn", [
    lambda L: L.ones(2, 3).sum(5),
    lambda L: L.ones(2, 3).sum((0, 0)),
    lambda L: L.ones(0, 3).amax(0),
    lambda L: L.ones(0, 3).max(),
    lambda L: L.ones(0, 3).argmax(),
    lambda L: L.ones(0, 3).max(0),
    lambda L: L.ones(3, dtype=L.long).mean(),
    lambda L: L.ones(3, dtype=L.long).var(),
    lambda L: L.ones(3, dtype=L.bool).argmax(),
    lambda L: L.ones(2, 3).cumsum(2),
])
def test_errors_match_torch(fn):
    assert_same_error(lambda: fn(kiln), lambda: fn(torch))


GRAD_OPS = {
    "sum": lambda L, x: x.sum(), "sum dims": lambda L, x: x.sum((0, 2), keepdim=True),
    "mean": lambda L, x: x.mean(), "mean dim": lambda L, x: x.mean(-1),
    "amax": lambda L, x: x.amax(1), "amin": lambda L, x: x.amin((0, 2)), "max": lambda L, x: x.max(),
    "min": lambda L, x: x.min(), "max dim": lambda L, x: x.max(1)[0], "min dim": lambda L, x: x.min(2, keepdim=True)[0],
    "prod": lambda L, x: x.prod(), "prod dim": lambda L, x: x.prod(1),
    "prod with zeros": lambda L, x: (x * (x > 0.3)).prod(1),
    "var": lambda L, x: x.var(), "var correction": lambda L, x: x.var(dim=(0, 2), correction=0, keepdim=True),
    "std": lambda L, x: x.std(1), "logsumexp": lambda L, x: L.logsumexp(x, (1, 2)),
    "cumsum": lambda L, x: x.cumsum(1), "cumprod": lambda L, x: x.cumprod(2), "nansum": lambda L, x: L.nansum(x, 1),
}


@pytest.mark.parametrize("name", list(GRAD_OPS))
def test_gradients_match_torch_and_gradcheck(name):
    fn = GRAD_OPS[name]
    a = np.random.default_rng(len(name)).standard_normal((3, 4, 5))
    grads = []
    for L in (kiln, torch):
        x = L.tensor(a, requires_grad=True)
        out = fn(L, x)
        w = L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads.append(L.autograd.grad(out, x, w)[0].detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)
    if name != "prod with zeros":  # finite differences cross the mask's kink
        assert kiln.autograd.gradcheck(lambda x: fn(kiln, x), (kiln.tensor(a, requires_grad=True),))
