"""linalg.matrix_exp (kiln.matrix_exp, Tensor.matrix_exp), householder_product
(kiln.orgqr, Tensor.orgqr), linalg.vander, tensorinv, tensorsolve and
linalg.diagonal against torch: values over batches, both float dtypes,
empty and non-contiguous inputs and edge values; gradients with respect to
every differentiable input; torch's exception types and words for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kiln
from test_linalg_decompositions import _pair, _tol
from tolerant_compare import assert_fails_alike as _same_error, assert_matches, assert_same_failure
from torch_compare import raised

DTYPES = ["float32", "float64"]


def _array(shape, seed=0, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _close(k, t, dtype="float64", **kw):
    assert isinstance(k, kiln.Tensor), f"kiln returned {type(k).__name__}"
    assert tuple(k.shape) == tuple(t.shape), f"shape {tuple(k.shape)} != torch {tuple(t.shape)}"
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    torch.testing.assert_close(torch.from_numpy(np.array(k.detach().numpy())), t.detach(), equal_nan=True,
                               **(kw or _tol(dtype)))


def _relative_error(k, t):
    """max |k - t| over max |t|, per matrix of the batch."""
    k = np.asarray(k.detach().numpy(), dtype=np.float64)
    t = np.asarray(t.detach().numpy(), dtype=np.float64)
    return np.abs(k - t).max(axis=(-1, -2)) / np.abs(t).max(axis=(-1, -2))


def _grads(kfn, tfn, inputs, dtype="float64", seed=7):
    """Backward of sum(f(...) * g) for a random g through both libraries; compares every input's gradient."""
    pairs = [_pair(x, dtype, requires_grad=True) for x in inputs]
    k_out = kfn(*[k for k, _ in pairs])
    t_out = tfn(*[t for _, t in pairs])
    g = _array(tuple(t_out.shape), seed).astype(dtype)
    (k_out * kiln.from_numpy(g.copy())).sum().backward()
    (t_out * torch.from_numpy(g.copy())).sum().backward()
    for k, t in pairs:
        assert k.grad is not None, "kiln produced no gradient"
        _close(k.grad, t.grad, dtype)


# --- matrix_exp -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [1e-3, 0.3, 1.0, 4.0, 30.0])
def test_matrix_exp_values_against_float64_truth(dtype, scale):
    a = _array((3, 5, 5), seed=int(scale * 10), scale=scale)
    k, t = _pair(a, dtype)
    truth = torch.linalg.matrix_exp(torch.from_numpy(a))  # float64
    result = kiln.linalg.matrix_exp(k)
    assert tuple(result.shape) == (3, 5, 5) and result.dtype == getattr(kiln, dtype)
    # as accurate as torch's own (relative to each matrix's size), within a small factor
    bound = {"float32": 2e-5, "float64": 1e-12}[dtype] * max(1.0, scale)
    assert (_relative_error(result, truth) <= bound).all()
    assert (_relative_error(result, torch.linalg.matrix_exp(t)) <= bound).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_exp_matches_torch_over_a_batch_of_mixed_norms(dtype):
    # each matrix is scaled by its own power of two: a small one next to a large one stays accurate
    a = _array((2, 3, 4, 4), seed=3) * np.array([1e-4, 0.5, 8.0])[None, :, None, None]
    k, t = _pair(a, dtype)
    bound = 3e-6 if dtype == "float32" else 1e-13
    result = kiln.linalg.matrix_exp(k)
    assert tuple(result.shape) == (2, 3, 4, 4)
    assert (_relative_error(result, torch.linalg.matrix_exp(t)) < bound).all()
    singles = [kiln.linalg.matrix_exp(k[i, j]) for i in range(2) for j in range(3)]
    assert max(float(_relative_error(s, torch.linalg.matrix_exp(t[i // 3, i % 3]))) for i, s in
               enumerate(singles)) < bound


def test_matrix_exp_closed_forms():
    theta = 0.7
    rotation = kiln.tensor([[0.0, -theta], [theta, 0.0]], dtype=kiln.float64)
    expected = torch.tensor([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]],
                            dtype=torch.float64)
    _close(kiln.linalg.matrix_exp(rotation), expected, rtol=1e-14, atol=1e-15)
    nilpotent = kiln.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=kiln.float64)
    _close(kiln.linalg.matrix_exp(nilpotent), torch.tensor([[1.0, 1.0, 3.5], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]],
                                                           dtype=torch.float64), rtol=1e-14, atol=1e-14)
    diagonal = kiln.diag(kiln.tensor([-2.0, 0.0, 3.0], dtype=kiln.float64))
    _close(kiln.linalg.matrix_exp(diagonal), torch.diag(torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64).exp()),
           rtol=1e-14, atol=1e-15)
    zeros = kiln.linalg.matrix_exp(kiln.zeros(2, 3, 3))
    assert_matches(zeros, torch.eye(3).expand(2, 3, 3), exact=True)
    a = kiln.from_numpy(_array((4, 4), seed=5))
    product = kiln.linalg.matrix_exp(a) @ kiln.linalg.matrix_exp(-a)
    _close(product, torch.eye(4, dtype=torch.float64), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (1, 1), (3, 1, 1)])
def test_matrix_exp_empty_and_one_by_one(shape):
    k, t = _pair(_array(shape, seed=2))
    _close(kiln.linalg.matrix_exp(k), torch.linalg.matrix_exp(t), rtol=1e-15, atol=0)


def test_matrix_exp_non_contiguous_and_aliases():
    a = _array((3, 6, 6), seed=4)
    k, t = _pair(a)
    kv, tv = k.mT[:, ::2, 1::2], t.mT[:, ::2, 1::2]
    assert not kv.is_contiguous()
    _close(kiln.linalg.matrix_exp(kv), torch.linalg.matrix_exp(tv))
    _close(kiln.matrix_exp(kv), torch.matrix_exp(tv))
    _close(kv.matrix_exp(), tv.matrix_exp())


def test_matrix_exp_non_finite_matrices_are_nan():
    a = _array((3, 2, 2), seed=6)
    a[0, 0, 1] = math.inf
    a[2, 1, 1] = math.nan
    k, t = _pair(a)
    result, expected = kiln.linalg.matrix_exp(k), torch.linalg.matrix_exp(t)
    _close(result, expected)
    assert np.isnan(result.numpy()[0]).all() and np.isnan(result.numpy()[2]).all()
    assert np.isfinite(result.numpy()[1]).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matrix_exp_half_dtypes_keep_their_dtype(dtype):
    # torch's own half matrix_exp is not accurate on CPU (exp(ones(2, 2)) comes out inf): compare with float64
    a = _array((2, 3, 3), seed=8)
    k = kiln.from_numpy(a.astype("float32")).to(getattr(kiln, dtype))
    truth = torch.linalg.matrix_exp(torch.from_numpy(a.astype("float32")).to(getattr(torch, dtype)).double())
    result = kiln.linalg.matrix_exp(k)
    assert result.dtype == getattr(kiln, dtype) and tuple(result.shape) == (2, 3, 3)
    assert (_relative_error(result.to(kiln.float64), truth) < 2e-2).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.1, 1.0, 6.0])
def test_matrix_exp_gradient(dtype, scale):
    a = _array((2, 4, 4), seed=9, scale=scale)
    tol = {"rtol": 2e-4, "atol": 2e-4 * max(1.0, scale ** 2)} if dtype == "float32" else None
    pairs = [_pair(a, dtype, requires_grad=True)]
    k_out, t_out = kiln.linalg.matrix_exp(pairs[0][0]), torch.linalg.matrix_exp(pairs[0][1])
    g = _array((2, 4, 4), seed=10).astype(dtype)
    (k_out * kiln.from_numpy(g.copy())).sum().backward()
    (t_out * torch.from_numpy(g.copy())).sum().backward()
    scale_of = float(pairs[0][1].grad.abs().max())
    if tol is None:
        tol = {"rtol": 1e-9, "atol": 1e-10 * max(1.0, scale_of)}
    _close(pairs[0][0].grad, pairs[0][1].grad, dtype, **tol)


def test_matrix_exp_gradient_mixed_batch_and_one_by_one():
    a = _array((3, 3, 3), seed=11) * np.array([1e-3, 1.0, 10.0])[:, None, None]
    _grads(kiln.linalg.matrix_exp, torch.linalg.matrix_exp, [a])
    _grads(kiln.linalg.matrix_exp, torch.linalg.matrix_exp, [_array((2, 1, 1), seed=12)])


@pytest.mark.parametrize("case", ["int", "bool", "not square", "vector", "scalar", "list"])
def test_matrix_exp_errors(case):
    make = {"int": lambda lib: lib.ones(2, 2, dtype=lib.int64), "bool": lambda lib: lib.ones(2, 2, dtype=lib.bool),
            "not square": lambda lib: lib.ones(2, 3), "vector": lambda lib: lib.ones(3),
            "scalar": lambda lib: lib.ones(()), "list": lambda lib: [[1.0]]}[case]
    _same_error(lambda: kiln.linalg.matrix_exp(make(kiln)), lambda: torch.linalg.matrix_exp(make(torch)))
    if case != "list":
        _same_error(lambda: kiln.matrix_exp(make(kiln)), lambda: torch.matrix_exp(make(torch)))


# --- householder_product ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n, k", [(5, 3, 3), (5, 3, 2), (4, 4, 4), (4, 4, 1), (3, 3, 0), (3, 0, 0), (6, 2, 2)])
@pytest.mark.parametrize("batch", [(), (2,), (2, 1)])
def test_householder_product_values(dtype, m, n, k, batch):
    a, tau = _array((*batch, m, n), seed=m * n + k), _array((*batch, k), seed=k + 1)
    ka, ta = _pair(a, dtype)
    kt, tt = _pair(tau, dtype)
    _close(kiln.linalg.householder_product(ka, kt), torch.linalg.householder_product(ta, tt), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_of_geqrf_is_qr_q(dtype):
    a = torch.from_numpy(_array((2, 6, 4), seed=13).astype(dtype))
    reflectors, tau = torch.geqrf(a)
    q = kiln.linalg.householder_product(kiln.from_numpy(reflectors.numpy().copy()), kiln.from_numpy(tau.numpy().copy()))
    _close(q, torch.linalg.qr(a).Q, dtype)
    _close(q.mT @ q, torch.eye(4, dtype=a.dtype).expand(2, 4, 4), dtype)


def test_householder_product_non_contiguous_and_aliases():
    a, tau = _array((4, 7), seed=14), _array((2, 5), seed=15)
    ka, ta = _pair(a)
    kt, tt = _pair(tau)
    kv, tv, ktv, ttv = ka.mT[::1, :4], ta.mT[::1, :4], kt[:, ::2].mT.reshape(3, 2)[:, 0], tt[:, ::2].mT.reshape(3, 2)[:, 0]
    assert not kv.is_contiguous()
    expected = torch.linalg.householder_product(tv, ttv)
    _close(kiln.linalg.householder_product(kv, ktv), expected)
    _close(kiln.orgqr(kv, ktv), torch.orgqr(tv, ttv))
    _close(kv.orgqr(ktv), tv.orgqr(ttv))
    out = kiln.empty(7, 4, dtype=kiln.float64)
    returned = kiln.linalg.householder_product(kv, ktv, out=out)
    _close(out, expected)
    assert returned is out or returned.data_ptr() == out.data_ptr()


@pytest.mark.parametrize("m, n, k", [(5, 3, 3), (5, 3, 1), (3, 3, 3), (4, 3, 2)])
def test_householder_product_gradient(m, n, k):
    _grads(kiln.linalg.householder_product, torch.linalg.householder_product,
           [_array((2, m, n), seed=16), _array((2, k), seed=17)])


def test_householder_product_without_reflectors_has_zero_gradients():
    # torch leaves both gradients undefined (None) here; kiln's are zeros of the inputs' shapes
    a = kiln.from_numpy(_array((2, 4, 2), seed=30)).requires_grad_(True)
    tau = kiln.zeros(2, 0, dtype=kiln.float64).requires_grad_(True)
    q = kiln.linalg.householder_product(a, tau)
    _close(q, torch.eye(4, 2, dtype=torch.float64).expand(2, 4, 2), rtol=0, atol=0)
    q.sum().backward()
    assert_matches(a.grad, torch.zeros(2, 4, 2, dtype=torch.float64), exact=True)
    assert tuple(tau.grad.shape) == (2, 0)


def test_householder_product_gradient_float32():
    _grads(kiln.linalg.householder_product, torch.linalg.householder_product,
           [_array((5, 3), seed=18), _array((3,), seed=19)], dtype="float32")


@pytest.mark.parametrize("a_shape, tau_shape, a_dtype, tau_dtype", [
    ((3,), (1,), "float32", "float32"),
    ((3, 2), (3,), "float32", "float32"),
    ((2, 3), (1,), "float32", "float32"),
    ((3, 2), (2, 1), "float32", "float32"),
    ((3, 2), (2, 3), "float32", "float32"),
    ((2, 3, 2), (3, 1), "float32", "float32"),
    ((3, 2), (1,), "float32", "float64"),
    ((3, 2), (1,), "int64", "float32"),
    ((3, 2), (1,), "int64", "int64"),
    ((3, 2), (1,), "float16", "float16"),
    ((3, 2), (), "float32", "float32"),
])
def test_householder_product_errors(a_shape, tau_shape, a_dtype, tau_dtype):
    def call(lib, fn):
        return lambda: fn(lib.ones(*a_shape, dtype=getattr(lib, a_dtype)), lib.ones(*tau_shape, dtype=getattr(lib, tau_dtype)))

    _same_error(call(kiln, kiln.linalg.householder_product), call(torch, torch.linalg.householder_product))
    _same_error(call(kiln, kiln.orgqr), call(torch, torch.orgqr))


def test_householder_product_rejects_non_tensors():
    _same_error(lambda: kiln.linalg.householder_product([[1.0]], kiln.ones(1)),
                lambda: torch.linalg.householder_product([[1.0]], torch.ones(1)))
    _same_error(lambda: kiln.linalg.householder_product(kiln.ones(2, 1), 1.0),
                lambda: torch.linalg.householder_product(torch.ones(2, 1), 1.0))


# --- linalg.vander ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "int16"])
@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 1, 5), (), (2, 0)])
@pytest.mark.parametrize("N", [None, 2, 5])
def test_linalg_vander_values(dtype, shape, N):
    if (N is None and (shape in ((), (2, 0)) or shape[-1] < 2)):
        N = 3  # the default N (the last size) is not above 1 there: the error test covers it
    x = np.random.default_rng(20).integers(-3, 4, size=shape) if dtype != "uint8" else \
        np.random.default_rng(20).integers(0, 4, size=shape)
    k, t = _pair(x, dtype)
    if dtype.startswith("float"):
        k, t = k * 0.7, t * 0.7
    assert_matches(kiln.linalg.vander(k, N=N), torch.linalg.vander(t, N=N), exact=not dtype.startswith("float"))


def test_linalg_vander_integer_wraparound_and_non_contiguous():
    k, t = _pair(np.array([[3, -7], [100, 2]]), "int64")
    assert_matches(kiln.linalg.vander(k.mT, N=12), torch.linalg.vander(t.mT, N=12), exact=True)
    k, t = _pair(np.array([200, 7, 255]), "uint8")
    assert_matches(kiln.linalg.vander(k, N=4), torch.linalg.vander(t, N=4), exact=True)
    k, t = _pair(_array((3, 4), seed=21))
    assert not k.mT.is_contiguous()
    assert_matches(kiln.linalg.vander(k.mT, N=4), torch.linalg.vander(t.mT, N=4))


@pytest.mark.parametrize("dtype", DTYPES)
def test_linalg_vander_gradient_including_zero(dtype):
    x = _array((2, 4), seed=22)
    x[0, 1] = 0.0
    _grads(lambda a: kiln.linalg.vander(a, N=5), lambda a: torch.linalg.vander(a, N=5), [x], dtype)
    _grads(kiln.linalg.vander, torch.linalg.vander, [x], dtype)


@pytest.mark.parametrize("call", ["N=1", "N=0", "N=-1", "scalar", "empty", "bool", "bool N=1", "N float", "list"])
def test_linalg_vander_errors(call):
    def make(lib):
        L = lib.linalg
        return {"N=1": lambda: L.vander(lib.ones(3), N=1), "N=0": lambda: L.vander(lib.ones(3), N=0),
                "N=-1": lambda: L.vander(lib.ones(3), N=-1), "scalar": lambda: L.vander(lib.ones(())),
                "empty": lambda: L.vander(lib.ones(2, 0)), "bool": lambda: L.vander(lib.ones(3, dtype=lib.bool)),
                "bool N=1": lambda: L.vander(lib.ones(3, dtype=lib.bool), N=1),
                "N float": lambda: L.vander(lib.ones(3), N=1.5), "list": lambda: L.vander([1.0, 2.0])}[call]

    _same_error(make(kiln), make(torch))


# --- tensorinv and tensorsolve ----------------------------------------------------------------------------


def _invertible(shape, seed):
    n = int(np.prod(shape[: len(shape) // 2])) if len(shape) > 1 else shape[0]
    a = _array((n, n), seed) + n * np.eye(n)
    return a


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, ind", [((6, 2, 3), 1), ((2, 3, 6), 2), ((4, 2, 2, 4), 2), ((2, 2, 2, 8), 3),
                                        ((5, 5), 1), ((0, 0), 1)])
def test_tensorinv_values(dtype, shape, ind):
    n = int(np.prod(shape[:ind]))
    a = (_array((n, n), seed=23) + (n + 1) * np.eye(n)).reshape(shape)
    k, t = _pair(a, dtype)
    result = kiln.linalg.tensorinv(k, ind=ind)
    _close(result, torch.linalg.tensorinv(t, ind=ind), dtype)
    if n:
        identity = kiln.tensordot(k, result, k.dim() - ind)
        _close(identity.reshape(n, n), torch.eye(n, dtype=t.dtype), dtype)


def test_tensorinv_gradient_and_out():
    a = (_array((6, 6), seed=24) + 7 * np.eye(6)).reshape(2, 3, 6)
    _grads(lambda x: kiln.linalg.tensorinv(x, 2), lambda x: torch.linalg.tensorinv(x, 2), [a])
    k, t = _pair(a)
    out = kiln.empty(6, 2, 3, dtype=kiln.float64)
    kiln.linalg.tensorinv(k, out=out)
    _close(out, torch.linalg.tensorinv(t))


@pytest.mark.parametrize("case", ["ind=0", "ind=-1", "ind=1", "ind=3", "ind float", "singular", "zeros", "int",
                                  "list"])
def test_tensorinv_errors(case):
    def make(lib):
        L = lib.linalg
        ones = lib.ones(2, 3, 6)
        return {"ind=0": lambda: L.tensorinv(ones, ind=0), "ind=-1": lambda: L.tensorinv(ones, ind=-1),
                "ind=1": lambda: L.tensorinv(ones, ind=1), "ind=3": lambda: L.tensorinv(ones, ind=3),
                "ind float": lambda: L.tensorinv(ones, ind=2.0), "singular": lambda: L.tensorinv(ones, ind=2),
                "zeros": lambda: L.tensorinv(lib.zeros(2, 3, 6)),
                "int": lambda: L.tensorinv(lib.ones(2, 3, 6, dtype=lib.int64)),
                "list": lambda: L.tensorinv([[1.0]])}[case]

    terror = raised(make(torch))
    kerror = raised(make(kiln))
    if case in ("singular", "zeros"):
        assert isinstance(terror, torch.linalg.LinAlgError) and isinstance(kerror, kiln.linalg.LinAlgError)
        assert str(kerror) == str(terror)
    else:
        assert_same_failure(kerror, terror)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape, dims", [((6, 2, 3), (6,), None), ((2, 3, 6), (2, 3), None),
                                                   ((2, 3, 6), (6,), (0, 1)), ((6, 2, 3), (2, 3), (0,)),
                                                   ((3, 4, 2, 6), (3, 4), None), ((4, 4), (4,), None)])
def test_tensorsolve_values(dtype, a_shape, b_shape, dims):
    n = int(np.prod(b_shape))
    a = (_array((n, n), seed=25) + (n + 1) * np.eye(n)).reshape(a_shape)
    b = _array(b_shape, seed=26)
    ka, ta = _pair(a, dtype)
    kb, tb = _pair(b, dtype)
    result = kiln.linalg.tensorsolve(ka, kb, dims=dims)
    _close(result, torch.linalg.tensorsolve(ta, tb, dims=dims), dtype)
    moved = ka if dims is None else ka.movedim(list(dims), list(range(ka.dim() - len(dims), ka.dim())))
    _close(kiln.tensordot(moved, result, result.dim()), tb, dtype)


def test_tensorsolve_gradient_and_non_contiguous():
    a = (_array((6, 6), seed=27) + 7 * np.eye(6)).reshape(2, 3, 6)
    b = _array((2, 3), seed=28)
    _grads(kiln.linalg.tensorsolve, torch.linalg.tensorsolve, [a, b])
    _grads(lambda x, y: kiln.linalg.tensorsolve(x, y, dims=(0,)), lambda x, y: torch.linalg.tensorsolve(x, y, dims=(0,)),
           [a.reshape(6, 2, 3).transpose(0, 2, 1).copy(), b.reshape(3, 2)])
    ka, ta = _pair(a.transpose(1, 0, 2).copy())
    kb, tb = _pair(b.T.copy())
    kv, tv = ka.transpose(0, 1), ta.transpose(0, 1)
    assert not kv.is_contiguous()
    _close(kiln.linalg.tensorsolve(kv, kb.mT), torch.linalg.tensorsolve(tv, tb.mT))


@pytest.mark.parametrize("case", ["shapes", "shapes 2", "wrong numel", "dtype", "int", "singular", "bad dims"])
def test_tensorsolve_errors(case):
    def make(lib):
        L = lib.linalg
        eye = lib.eye(6).reshape(2, 3, 6)
        return {"shapes": lambda: L.tensorsolve(lib.ones(2, 3, 6), lib.ones(6)),
                "shapes 2": lambda: L.tensorsolve(eye, lib.ones(6).reshape(2, 3), dims=(0, 1)),
                "wrong numel": lambda: L.tensorsolve(eye, lib.ones(5)),
                "dtype": lambda: L.tensorsolve(eye, lib.ones(2, 3, dtype=lib.float64)),
                "int": lambda: L.tensorsolve(lib.ones(2, 3, 6, dtype=lib.int64), lib.ones(2, 3, dtype=lib.int64)),
                "singular": lambda: L.tensorsolve(lib.ones(2, 3, 6), lib.ones(2, 3)),
                "bad dims": lambda: L.tensorsolve(lib.eye(6).reshape(6, 2, 3), lib.ones(6), dims=(5,))}[case]

    terror, kerror = raised(make(torch)), raised(make(kiln))
    if case == "singular":
        assert isinstance(terror, torch.linalg.LinAlgError) and isinstance(kerror, kiln.linalg.LinAlgError)
        assert str(kerror) == str(terror).replace("torch", "kiln")
    else:
        assert_same_failure(kerror, terror)


# --- linalg.diagonal --------------------------------------------------------------------------------------


@pytest.mark.parametrize("offset, dim1, dim2", [(0, -2, -1), (1, -2, -1), (-2, -2, -1), (0, 0, 2), (1, 2, 0), (7, -2, -1)])
def test_linalg_diagonal_values_and_gradient(offset, dim1, dim2):
    a = _array((3, 4, 5), seed=29)
    k, t = _pair(a)
    assert_matches(kiln.linalg.diagonal(k, offset=offset, dim1=dim1, dim2=dim2),
                   torch.linalg.diagonal(t, offset=offset, dim1=dim1, dim2=dim2), exact=True)
    assert_matches(kiln.linalg.diagonal(k.mT), torch.linalg.diagonal(t.mT), exact=True)
    _grads(lambda x: kiln.linalg.diagonal(x, offset=offset, dim1=dim1, dim2=dim2),
           lambda x: torch.linalg.diagonal(x, offset=offset, dim1=dim1, dim2=dim2), [a])


def test_linalg_diagonal_errors():
    _same_error(lambda: kiln.linalg.diagonal(kiln.ones(3)), lambda: torch.linalg.diagonal(torch.ones(3)))
    _same_error(lambda: kiln.linalg.diagonal(kiln.ones(3, 3), dim1=0, dim2=0),
                lambda: torch.linalg.diagonal(torch.ones(3, 3), dim1=0, dim2=0))
    _same_error(lambda: kiln.linalg.diagonal(kiln.ones(3, 3), 1), lambda: torch.linalg.diagonal(torch.ones(3, 3), 1),
                message=False)
