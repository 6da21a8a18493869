"""torch.geqrf, torch.ormqr and torch.linalg.ldl_factor(_ex) / ldl_solve (python/kiln/linalg/_raw_factors.py,
eager/kernels/cpu/linalg/LapackRawFactors.cpp) against torch: the factors themselves (LAPACK's algorithms are the
same in OpenBLAS and MKL), their layouts, products, solves, gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _pair(shape, seed, dtype="float64", requires_grad=False):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (kiln.tensor(data, requires_grad=requires_grad), torch.tensor(data, requires_grad=requires_grad))


def _symmetric(shape, seed, dtype="float64"):
    data = np.random.default_rng(seed).standard_normal(shape)
    data = data + np.swapaxes(data, -1, -2)
    return kiln.tensor(data.astype(dtype)), torch.tensor(data.astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4), (0, 3), (3, 0), (0, 2, 2)])
def test_geqrf_matches_torch(dtype, shape):
    k, t = _pair(shape, 1, dtype)
    ka, ktau = kiln.geqrf(k)
    ta, ttau = torch.geqrf(t)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(ka.numpy(), ta.numpy(), atol=tol, rtol=tol)
    np.testing.assert_allclose(ktau.numpy(), ttau.numpy(), atol=tol, rtol=tol)
    assert tuple(ka.stride()) == tuple(ta.stride()) and tuple(ktau.shape) == tuple(ttau.shape)
    assert type(kiln.geqrf(k)).__name__ == "geqrf" and k.geqrf().a.shape == ka.shape


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("input_shape, other_shape", [((5, 3), (5, 2)), ((4, 6), (4, 4)), ((2, 4, 4), (2, 4, 3))])
def test_ormqr_values_and_gradients_match_torch(left, transpose, input_shape, other_shape):
    if not left:
        other_shape = other_shape[:-2] + (other_shape[-1], other_shape[-2])
    base, tbase = _pair(input_shape, 2)
    ka, ktau = kiln.geqrf(base)
    ta, ttau = torch.geqrf(tbase)
    ka, ktau = ka.detach().requires_grad_(), ktau.detach().requires_grad_()
    ta, ttau = ta.detach().requires_grad_(), ttau.detach().requires_grad_()
    ko, to = _pair(other_shape, 3, requires_grad=True)
    kr = kiln.ormqr(ka, ktau, ko, left=left, transpose=transpose)
    tr = torch.ormqr(ta, ttau, to, left=left, transpose=transpose)
    np.testing.assert_allclose(kr.detach().numpy(), tr.detach().numpy(), atol=1e-10)
    weights = np.cos(np.arange(int(np.prod(tr.shape)))).reshape(tuple(tr.shape))
    (kr * kiln.tensor(weights)).sum().backward()
    (tr * torch.tensor(weights)).sum().backward()
    for kg, tg in ((ka.grad, ta.grad), (ktau.grad, ttau.grad), (ko.grad, to.grad)):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), atol=1e-9)


@pytest.mark.parametrize("args", [
    ((3,), (3,), (3, 2)),              # input 1-D
    ((3, 3), (4,), (3, 2)),            # too many reflectors
    ((2, 4, 3), (3, 3), (2, 4, 2)),    # tau's batch
    ((4, 3), (3,), (3, 2)),            # other's rows
    ((4, 3), (3,), (4,)),              # other 1-D
])
def test_ormqr_errors_match_torch(args):
    (ka, ta), (kt, tt), (ko, to) = (_pair(s, i, "float32") for i, s in enumerate(args))
    assert_same_failure(raised(lambda: kiln.ormqr(ka, kt, ko)), raised(lambda: torch.ormqr(ta, tt, to)))


def test_ormqr_dtype_mismatch_and_geqrf_errors_match_torch():
    ka, ta = _pair((3, 3), 1, "float32")
    kt, tt = _pair((3,), 2, "float32")
    ko, to = _pair((3, 2), 3, "float64")
    k_err, t_err = raised(lambda: kiln.ormqr(ka, kt, ko)), raised(lambda: torch.ormqr(ta, tt, to))
    assert type(k_err) is type(t_err) and "same dtype" in str(k_err)
    assert_same_failure(raised(lambda: kiln.geqrf(kiln.zeros(3))), raised(lambda: torch.geqrf(torch.zeros(3))))
    assert_same_failure(raised(lambda: kiln.geqrf(kiln.zeros(3, 3, dtype=kiln.float16))),
                        raised(lambda: torch.geqrf(torch.zeros(3, 3, dtype=torch.float16))))
    assert_same_failure(raised(lambda: kiln.geqrf(kiln.zeros(3, 3, dtype=kiln.int64))),
                        raised(lambda: torch.geqrf(torch.zeros(3, 3, dtype=torch.int64))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (1, 1), (0, 0), (3, 0, 0)])
def test_ldl_factor_matches_torch(dtype, shape):
    k, t = _symmetric(shape, 4, dtype)
    kLD, kp, kinfo = kiln.linalg.ldl_factor_ex(k)
    tLD, tp, tinfo = torch.linalg.ldl_factor_ex(t)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(kLD.numpy(), tLD.numpy(), atol=tol, rtol=tol)
    assert_matches(kp, tp, exact=True)
    assert_matches(kinfo, tinfo, exact=True)
    assert tuple(kLD.stride()) == tuple(tLD.stride())
    kLD2, kp2 = kiln.linalg.ldl_factor(k, hermitian=True)
    np.testing.assert_allclose(kLD2.numpy(), tLD.numpy(), atol=tol, rtol=tol)


@pytest.mark.parametrize("ld_shape, b_shape", [((4, 4), (4, 2)), ((2, 4, 4), (4, 3)), ((4, 4), (3, 4, 1)),
                                               ((2, 1, 3, 3), (4, 3, 2)), ((3, 3), (3, 0))])
def test_ldl_solve_matches_torch(ld_shape, b_shape):
    k, t = _symmetric(ld_shape, 5)
    kb, tb = _pair(b_shape, 6)
    kLD, kp = kiln.linalg.ldl_factor(k)
    kx = kiln.linalg.ldl_solve(kLD, kp, kb)
    # The reference is torch.linalg.solve: torch 2.13's own ldl_solve crashes (SIGSEGV) when LD's batch
    # has a broadcast dimension, as in the (2, 1, 3, 3) case here.
    tx = torch.linalg.solve(t, tb)
    assert tuple(kx.shape) == tuple(tx.shape)
    np.testing.assert_allclose(kx.numpy(), tx.numpy(), atol=1e-8, rtol=1e-8)


def test_ldl_errors_match_torch():
    assert_same_failure(raised(lambda: kiln.linalg.ldl_factor_ex(kiln.zeros(3, 4))),
                        raised(lambda: torch.linalg.ldl_factor_ex(torch.zeros(3, 4))))
    assert_same_failure(raised(lambda: kiln.linalg.ldl_factor_ex(kiln.zeros(3, 3, dtype=kiln.int32))),
                        raised(lambda: torch.linalg.ldl_factor_ex(torch.zeros(3, 3, dtype=torch.int32))),
                        message=False)
    # singular D: info > 0 from _ex; ldl_factor raises RuntimeError (torch's is an internal assert)
    _, _, info = kiln.linalg.ldl_factor_ex(kiln.zeros(2, 3, 3))
    assert info.tolist() == torch.linalg.ldl_factor_ex(torch.zeros(2, 3, 3)).info.tolist()
    assert isinstance(raised(lambda: kiln.linalg.ldl_factor(kiln.zeros(3, 3))), RuntimeError)
    LD, p = kiln.linalg.ldl_factor(kiln.eye(3))
    tLD, tp = torch.linalg.ldl_factor(torch.eye(3))
    assert_same_failure(raised(lambda: kiln.linalg.ldl_solve(LD, p, kiln.zeros(4, 2))),
                        raised(lambda: torch.linalg.ldl_solve(tLD, tp, torch.zeros(4, 2))))
    assert_same_failure(raised(lambda: kiln.linalg.ldl_solve(LD, p, kiln.zeros(3, 2, dtype=kiln.float64))),
                        raised(lambda: torch.linalg.ldl_solve(tLD, tp, torch.zeros(3, 2, dtype=torch.float64))))
    assert_same_failure(raised(lambda: kiln.linalg.ldl_solve(LD, p, kiln.zeros(3))),
                        raised(lambda: torch.linalg.ldl_solve(tLD, tp, torch.zeros(3))))
    # a corrupted pivot never reaches LAPACK (it would index outside the matrix)
    bad = kiln.tensor([1, 9, 3], dtype=kiln.int32)
    with pytest.raises(IndexError, match="pivot 9 at position 2 is out of range"):
        kiln.linalg.ldl_solve(LD, bad, kiln.zeros(3, 2))
    with pytest.raises(RuntimeError, match="Expected pivots to be integers"):
        kiln.linalg.ldl_solve(LD, p.long().float(), kiln.zeros(3, 2))


def test_raw_factors_have_no_derivative_like_torch():
    k = kiln.randn(3, 3, requires_grad=True)
    t = torch.randn(3, 3, requires_grad=True)
    k_err = raised(lambda: kiln.geqrf(k).a.sum().backward())
    t_err = raised(lambda: torch.geqrf(t).a.sum().backward())
    assert k_err is not None and isinstance(k_err, (RuntimeError, NotImplementedError)) and t_err is not None
