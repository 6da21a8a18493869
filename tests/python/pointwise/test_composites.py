"""The ops kiln composes in Python from other ops (python/kiln/_aliases.py,
_dtypes.py, _comparison.py, _shape_composites.py, _numeric.py,
_tensor_factories.py) against torch: values, dtypes, errors (type and text),
and gradients where the op is differentiable."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure, assert_same_outcome
from torch_compare import raised


def _data(shape, seed=0, dtype="float64", low=-3, high=3):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(low, high, shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def _pair(array):
    return kiln.from_numpy(np.ascontiguousarray(array).copy()), torch.from_numpy(np.ascontiguousarray(array).copy())


def _same(fn, *arrays, exact=False):
    ks, ts = zip(*[_pair(a) for a in arrays]) if arrays else ((), ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assert_same_outcome(lambda: fn(kiln, *ks), lambda: fn(torch, *ts), exact=exact)


def _same_tuple(fn, *arrays):
    ks, ts = zip(*[_pair(a) for a in arrays])
    kout, tout = fn(kiln, *ks), fn(torch, *ts)
    assert len(kout) == len(tout)
    for k, t in zip(kout, tout):
        assert_matches(k, t, exact=True)


# --- aliases --------------------------------------------------------------------------------

ALIAS_CASES = [("multiply", 2), ("subtract", 2), ("divide", 2), ("greater", 2), ("less", 2), ("greater_equal", 2),
               ("less_equal", 2), ("not_equal", 2), ("arctan2", 2), ("arcsin", 1), ("arccos", 1), ("arctan", 1),
               ("arcsinh", 1), ("arctanh", 1)]


@pytest.mark.parametrize("name, arity", ALIAS_CASES)
def test_aliases_match_torch_in_every_form(name, arity):
    arrays = [_data((3, 4), seed=i, low=-0.9, high=0.9) for i in range(arity)]
    _same(lambda L, *xs: getattr(L, name)(*xs), *arrays)
    _same(lambda L, x, *rest: getattr(x, name)(*rest), *arrays)
    _same(lambda L, x, *rest: getattr(x.clone(), name + "_")(*rest), *arrays)


def test_positive_and_row_stack():
    _same(lambda L, x: L.positive(x), _data((3,)), exact=True)
    _same(lambda L, x: L.positive(x), _data((3,), dtype="bool"))
    _same(lambda L, a, b: L.row_stack([a, b]), _data((3,)), _data((3,), 1), exact=True)


# --- dtype queries ----------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promote_types_and_can_cast_match_torch(a, b):
    ka, kb, ta, tb = getattr(kiln, a), getattr(kiln, b), getattr(torch, a), getattr(torch, b)
    assert str(kiln.promote_types(ka, kb)).removeprefix("kiln.") == str(torch.promote_types(ta, tb)).removeprefix("torch.")
    assert kiln.can_cast(ka, kb) == torch.can_cast(ta, tb)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("other", [True, 3, 2.5, "zero_dim_float64", "zero_dim_int8", "vector_int32"])
def test_result_type_matches_torch(a, other):
    def operand(L):
        if other == "zero_dim_float64":
            return L.tensor(1.0, dtype=L.float64)
        if other == "zero_dim_int8":
            return L.tensor(1, dtype=L.int8)
        if other == "vector_int32":
            return L.ones(2, dtype=L.int32)
        return other

    k = kiln.result_type(kiln.ones(2, dtype=getattr(kiln, a)), operand(kiln))
    t = torch.result_type(torch.ones(2, dtype=getattr(torch, a)), operand(torch))
    assert str(k).removeprefix("kiln.") == str(t).removeprefix("torch.")


def test_result_type_of_two_numbers_and_predicates():
    for a, b in [(1, 2), (1, 2.0), (True, False), (True, 1)]:
        assert str(kiln.result_type(a, b)).removeprefix("kiln.") == str(torch.result_type(a, b)).removeprefix("torch.")
    for name in ("float32", "int64", "bool"):
        k, t = kiln.ones(2, dtype=getattr(kiln, name)), torch.ones(2, dtype=getattr(torch, name))
        assert kiln.is_floating_point(k) == torch.is_floating_point(t) == k.is_floating_point()
        assert kiln.is_complex(k) == torch.is_complex(t) is False


# --- comparisons --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
@pytest.mark.parametrize("kwargs", [{}, {"rtol": 0.1}, {"atol": 0.5}, {"rtol": 0, "atol": 0}, {"equal_nan": True}])
def test_isclose_allclose_match_torch(dtype, kwargs):
    a = _data((4, 5), 0, dtype)
    b = a.copy()
    if dtype.startswith("float"):
        b = (a + _data((4, 5), 1) * 0.05).astype(dtype)
        a.flat[[0, 3, 7]] = [np.nan, np.inf, -np.inf]
        b.flat[[0, 3, 7, 9]] = [np.nan, np.inf, np.inf, np.nan]
    elif dtype == "int64":
        b = a + _data((4, 5), 1, "int64", -1, 2)
    _same(lambda L, x, y: L.isclose(x, y, **kwargs), a, b, exact=True)
    _same(lambda L, x, y: x.isclose(y[0], **kwargs), a, b, exact=True)
    ka, kb = kiln.from_numpy(a), kiln.from_numpy(b)
    assert kiln.allclose(ka, kb, **kwargs) == torch.allclose(torch.from_numpy(a), torch.from_numpy(b), **kwargs)


COMPARISON_ERRORS = [
    ("isclose_dtypes", lambda L: L.isclose(L.ones(2), L.ones(2, dtype=L.int64))),
    ("isclose_rtol", lambda L: L.isclose(L.ones(2), L.ones(2), rtol=-1)),
    ("isclose_atol", lambda L: L.isclose(L.ones(2), L.ones(2), atol=-0.5)),
    ("isclose_number", lambda L: L.isclose(L.ones(2), 1.0)),
    ("isclose_broadcast", lambda L: L.isclose(L.ones(2, 3), L.ones(4))),
]


@pytest.mark.parametrize("name, fn", COMPARISON_ERRORS, ids=[n for n, _ in COMPARISON_ERRORS])
def test_comparison_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))


def test_equal_matches_torch():
    cases = [([1, 2], [1, 2]), ([1, 2], [1, 3]), ([1, 2], [1, 2, 3]), ([float("nan")], [float("nan")]), ([], [])]
    for a, b in cases:
        assert kiln.equal(kiln.tensor(a), kiln.tensor(b)) == torch.equal(torch.tensor(a), torch.tensor(b))
    assert kiln.equal(kiln.tensor([1, 2]), kiln.tensor([1.0, 2.0])) == torch.equal(torch.tensor([1, 2]),
                                                                                  torch.tensor([1.0, 2.0]))
    assert kiln.ones(2, 3).equal(kiln.ones(2, 3))


# --- shape composites ------------------------------------------------------------------------------

def test_tile_atleast_and_splits_match_torch():
    x = _data((2, 3))
    for dims in [(2,), (2, 1), (1, 2, 2), (3, 1, 1, 2)]:
        _same(lambda L, a: L.tile(a, dims), x, exact=True)
        _same(lambda L, a: a.tile(dims), x, exact=True)
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for shape in [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)]:
            _same(lambda L, a: getattr(L, fn)(a), _data(shape), exact=True)
        _same_tuple(lambda L, a, b: getattr(L, fn)(a, b), _data(()), _data((3,)))
        _same_tuple(lambda L, a, b: getattr(L, fn)([a, b]), _data((2, 3)), _data((3,)))
    y = _data((4, 6, 2))
    for fn, arg in [("hsplit", 2), ("hsplit", [1, 4]), ("vsplit", 2), ("vsplit", [3]), ("dsplit", 2), ("dsplit", [1])]:
        _same_tuple(lambda L, a: getattr(L, fn)(a, arg), y)
        _same_tuple(lambda L, a: getattr(a, fn)(arg), y)
    _same_tuple(lambda L, a: L.hsplit(a, 3), _data((6,)))


SHAPE_ERRORS = [
    ("hsplit_indivisible", lambda L: L.hsplit(L.ones(2, 4), 3)),
    ("vsplit_1d", lambda L: L.vsplit(L.ones(4), 2)),
    ("dsplit_2d", lambda L: L.dsplit(L.ones(4, 2), 2)),
    ("block_diag_3d", lambda L: L.block_diag(L.ones(2, 2), L.ones(1, 1, 1))),
    ("meshgrid_2d", lambda L: L.meshgrid(L.ones(2, 2), indexing="ij")),
    ("meshgrid_indexing", lambda L: L.meshgrid(L.ones(2), indexing="yx")),
    ("tril_indices_negative", lambda L: L.tril_indices(-1, 3)),
]


@pytest.mark.parametrize("name, fn", SHAPE_ERRORS, ids=[n for n, _ in SHAPE_ERRORS])
def test_shape_composite_errors_match_torch(name, fn):
    # (torch prints the offending tensor in C++'s format in meshgrid's message)
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)), message=name != "meshgrid_2d")


def test_block_diag_diagflat_cartesian_meshgrid_indices():
    _same(lambda L, a, b, c: L.block_diag(a, b, c), _data((2, 3), 0, "int64"), _data((), 1), _data((2,), 2, "int32"),
          exact=True)
    _same(lambda L, a: L.block_diag(a), _data((0, 2)), exact=True)
    for offset in (0, 1, -2):
        _same(lambda L, a: L.diagflat(a, offset), _data((2, 2)), exact=True)
    _same(lambda L, a, b, c: L.cartesian_prod(a, b, c), _data((2,)), _data((3,), 1), _data((1,), 2), exact=True)
    _same(lambda L, a: L.cartesian_prod(a), _data((3,)), exact=True)
    for indexing in ("ij", "xy"):
        _same_tuple(lambda L, a, b, c: L.meshgrid(a, b, c, indexing=indexing), _data((2,)), _data((3,), 1),
                    _data((4,), 2))
        _same_tuple(lambda L, a, b: L.meshgrid([a, b], indexing=indexing), _data((2,)), _data(()))
    with pytest.warns(UserWarning, match="indexing"):
        kiln.meshgrid(kiln.ones(2), kiln.ones(3))
    for args in [(3, 3), (4, 2, 1), (2, 5, -1), (0, 3), (3, 4, 10)]:
        for fn in ("tril_indices", "triu_indices"):
            assert_matches(getattr(kiln, fn)(*args), getattr(torch, fn)(*args), exact=True)
    assert_matches(kiln.tril_indices(3, 3, dtype=kiln.int32), torch.tril_indices(3, 3, dtype=torch.int32), exact=True)
    _same(lambda L, a: L.argwhere(a), _data((3, 4), 0, "int64", -1, 2), exact=True)


# --- numeric composites -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_diff_matches_torch(dtype):
    x = _data((3, 5), 0, dtype)
    for kwargs in [{}, {"n": 2}, {"n": 0}, {"dim": 0}, {"n": 7}]:
        _same(lambda L, a: L.diff(a, **kwargs), x, exact=dtype != "float32")
    _same(lambda L, a, p, q: a.diff(prepend=p, append=q), x, _data((3, 2), 1, dtype), _data((3, 1), 2, dtype))


NUMERIC_ERRORS = [
    ("diff_order", lambda L: L.diff(L.ones(3), n=-1)),
    ("diff_prepend_dims", lambda L: L.diff(L.ones(3, 2), prepend=L.ones(2))),
    ("nanmean_int", lambda L: L.nanmean(L.tensor([1, 2]))),
    ("cross_size", lambda L: L.linalg.cross(L.ones(2, 4), L.ones(2, 4))),
    ("cross_bool", lambda L: L.linalg.cross(L.ones(2, 3, dtype=L.bool), L.ones(2, 3, dtype=L.bool))),
    ("cross_mixed_dtypes", lambda L: L.linalg.cross(L.ones(2, 3), L.ones(2, 3, dtype=L.float64))),
    ("cross_int_and_float", lambda L: L.cross(L.ones(2, 3, dtype=L.int64), L.ones(2, 3), dim=1)),
    ("cov_3d", lambda L: L.cov(L.ones(2, 2, 2))),
    ("float_power_inplace", lambda L: L.ones(2).float_power_(2)),
    ("vander_2d", lambda L: L.vander(L.ones(2, 2))),
]


@pytest.mark.parametrize("name, fn", NUMERIC_ERRORS, ids=[n for n, _ in NUMERIC_ERRORS])
def test_numeric_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)), message=name != "cross_size")


def test_trapezoid_and_cumulative_match_torch():
    y = _data((3, 5))
    x = np.sort(_data((5,), 1))
    for fn in ("trapezoid", "cumulative_trapezoid"):
        _same(lambda L, a: getattr(L, fn)(a), y)
        _same(lambda L, a: getattr(L, fn)(a, dx=0.5, dim=0), y)
        _same(lambda L, a, b: getattr(L, fn)(a, b), y, x)
        _same(lambda L, a: getattr(L, fn)(a), _data((4,), 2, "int64"))
    _same(lambda L, a: L.trapezoid(a), _data((3, 0)))


def test_cross_nanmean_cov_corrcoef_dist_float_power_vander():
    a, b = _data((4, 3)), _data((1, 3), 1)
    _same(lambda L, x, y: L.linalg.cross(x, y), a, b)
    _same(lambda L, x, y: L.cross(x, y, dim=1), a, b)
    _same(lambda L, x, y: L.cross(x.t(), y.t().expand(3, 4)), a, b)
    with pytest.warns(UserWarning, match="dim arg is deprecated"):
        kiln.cross(kiln.ones(3, 3), kiln.ones(3, 3))
    n = _data((3, 4))
    n[0, 1] = n[2, 2] = np.nan
    n[1, :] = np.nan
    _same(lambda L, x: L.nanmean(x), n)
    _same(lambda L, x: L.nanmean(x, 1, keepdim=True), n)
    _same(lambda L, x: x.nanmean(dim=0), n)
    data = _data((3, 6))
    _same(lambda L, x: L.cov(x), data)
    _same(lambda L, x: L.cov(x, correction=0), data)
    _same(lambda L, x: L.cov(x[0]), data)
    _same(lambda L, x: L.cov(x), _data((2, 5), 3, "int64"))
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = _data((6,), 4, low=0.1, high=1)
    _same(lambda L, x, f, w: L.cov(x, fweights=f, aweights=w), data, fw, aw)
    _same(lambda L, x, f: L.cov(x, fweights=f, correction=0), data, fw)
    _same(lambda L, x: L.corrcoef(x), data)
    _same(lambda L, x: L.corrcoef(x[1]), data)
    _same(lambda L, x, y: L.dist(x, y), a, b)
    _same(lambda L, x, y: x.dist(y, 1), a, b)
    _same(lambda L, x, y: L.dist(x, y, float("inf")), a, b)
    _same(lambda L, x: L.float_power(x, 2), _data((3,), 0, "int64"), exact=True)
    _same(lambda L, x, y: L.float_power(x, y), _data((3,), 0, "float32", 0.5, 2), _data((3,), 1, "int32", 0, 3))
    _same(lambda L, x: L.float_power(2, x), _data((3,), 0, "int64", 0, 4), exact=True)
    _same(lambda L, x: x.clone().float_power_(0.5), _data((3,), 0, "float64", 0.5, 2))
    for kwargs in [{}, {"N": 2}, {"N": 5, "increasing": True}, {"N": 0}]:
        _same(lambda L, x: L.vander(x, **kwargs), _data((3,), 0, "int32"), exact=True)
        _same(lambda L, x: L.vander(x, **kwargs), _data((3,), 0, "float64"))


# --- gradients ---------------------------------------------------------------------------------------

GRADIENT_CASES = {
    "diff": ([(3, 5)], lambda L, a: L.diff(a, n=2, dim=1)),
    "trapezoid": ([(3, 5), (5,)], lambda L, a, x: [L.trapezoid(a, dx=0.3), L.trapezoid(a, x.cumsum(0))]),
    "cumulative_trapezoid": ([(3, 5)], lambda L, a: L.cumulative_trapezoid(a, dim=1)),
    "cross": ([(4, 3), (4, 3)], lambda L, a, b: L.linalg.cross(a, b)),
    "cov corrcoef": ([(3, 6)], lambda L, a: [L.cov(a), L.corrcoef(a)]),
    "nanmean": ([(3, 4)], lambda L, a: L.nanmean(a, 1)),
    "dist": ([(4, 3), (4, 3)], lambda L, a, b: [L.dist(a, b), L.dist(a, b, 3)]),
    "block_diag tile": ([(2, 2), (3,)], lambda L, a, b: [L.block_diag(a, b), L.tile(b, (2, 2))]),
    "float_power": ([(4,)], lambda L, a: L.float_power(a.abs() + 0.5, 1.5)),
}


@pytest.mark.parametrize("case", list(GRADIENT_CASES))
def test_composite_gradients_match_torch(case):
    shapes, fn = GRADIENT_CASES[case]
    arrays = [_data(s, i) for i, s in enumerate(shapes)]
    grads = {}
    for L in (kiln, torch):
        xs = [L.tensor(a, dtype=L.float64, requires_grad=True) for a in arrays]
        outs = fn(L, *xs)
        outs = outs if isinstance(outs, list) else [outs]
        total = sum((o * L.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum() for o in outs)
        grads[L.__name__] = L.autograd.grad(total, xs)
    for kg, tg in zip(grads["kiln"], grads["torch"]):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-9, atol=1e-12)


# --- new_* ----------------------------------------------------------------------------------------------

def test_new_factories_take_the_tensors_dtype():
    k, t = kiln.ones(2, dtype=kiln.int32), torch.ones(2, dtype=torch.int32)
    for fn in (lambda x: x.new_zeros(2, 3), lambda x: x.new_zeros((2, 3)), lambda x: x.new_ones([4]),
               lambda x: x.new_full((2,), 7), lambda x: x.new_tensor([1, 2, 3]),
               lambda x: x.new_ones(3, dtype=(kiln.float64 if isinstance(x, kiln.Tensor) else torch.float64))):
        assert_matches(fn(k), fn(t), exact=True)
    e = k.new_empty(3, 4)
    assert tuple(e.shape) == (3, 4) and e.dtype == kiln.int32
    s = k.new_empty_strided((2, 3), (1, 2))
    assert tuple(s.stride()) == (1, 2)
    r = kiln.ones(2).new_zeros(3, requires_grad=True)
    assert r.requires_grad and r.dtype == kiln.float32
    with pytest.warns(UserWarning, match="copy construct"):
        copied = k.new_tensor(kiln.tensor([1.5, 2.5]))
    assert copied.dtype == kiln.int32 and copied.tolist() == [1, 2]


# --- out= of the Python-level ops, Tensor.resize_ ------------------------------------------------

def test_python_level_out_resizes_with_torchs_warning_and_cast_check():
    for L in (kiln, torch):
        x = L.tensor([[1.0, float("nan"), 3.0]])
        out = L.empty(0)
        assert L.nanmean(x, 1, out=out) is out and tuple(out.shape) == (1,)
        with pytest.warns(UserWarning, match="resized"):
            L.nanmean(x, 1, out=L.zeros(3))
    with pytest.raises(RuntimeError, match="can't be cast"):
        kiln.linalg.solve(kiln.eye(2), kiln.ones(2), out=kiln.empty(2, dtype=kiln.int64))
    assert_matches(kiln.quantile(kiln.tensor([1.0, 2.0, 4.0]), 0.5, out=kiln.empty(0)),
                   torch.quantile(torch.tensor([1.0, 2.0, 4.0]), 0.5, out=torch.empty(0)))


def test_resize_matches_torch():
    k, t = kiln.arange(6.0), torch.arange(6.0)
    assert k.resize_(2, 3) is k and t.resize_(2, 3) is t
    assert_matches(k, t, exact=True)
    k.resize_([3])
    t.resize_([3])
    assert_matches(k, t, exact=True)
    assert tuple(k.resize_(4, 5).shape) == (4, 5)
    assert_same_failure(raised(lambda: kiln.ones(2).resize_(-1)), raised(lambda: torch.ones(2).resize_(-1)),
                        message=False)


@pytest.mark.parametrize("tolerances", [dict(rtol=0.5, atol=1), {}, dict(rtol=1.0, atol=0), dict(rtol=0, atol=0.99)])
def test_isclose_of_booleans_measures_distance_as_torch(tolerances):
    # torch casts booleans to the default float dtype, so a wide enough tolerance calls False close to True
    a, b = [[True], [False], [False]], [[True], [True], [False]]
    got = kiln.isclose(kiln.tensor(a), kiln.tensor(b), **tolerances)
    want = torch.isclose(torch.tensor(a), torch.tensor(b), **tolerances)
    assert got.tolist() == want.tolist()
