"""linalg.lu, lu_factor on rectangular matrices, lu_unpack, lu_solve (left,
right, adjoint), solve_ex, inv_ex and the torch.lu* spellings against torch:
values, LU gradients (square, tall and wide: Note [Decomposition gradients]),
singular matrices reported in info, and torch's words for bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _pair(shape, seed=0, dtype="float64", requires_grad=False, shift=0.0):
    a = np.random.default_rng(seed).standard_normal(shape)
    if shift and shape[-1] == shape[-2]:
        a = a + shift * np.eye(shape[-1])
    a = a.astype(dtype)
    k, t = kiln.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t


def _close(k, t, rtol=1e-9, atol=1e-9):
    assert tuple(k.shape) == tuple(t.shape), f"shape {tuple(k.shape)} != torch {tuple(t.shape)}"
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


SHAPES = [(4, 4), (2, 5, 3), (2, 3, 5), (3, 1, 4, 4), (0, 3), (3, 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_lu_and_lu_factor(dtype, shape):
    ka, ta = _pair(shape, dtype=dtype)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {}
    k_lu, t_lu = kiln.linalg.lu_factor(ka), torch.linalg.lu_factor(ta)
    _close(k_lu.LU, t_lu.LU, **tol)
    assert_matches(k_lu.pivots, t_lu.pivots, exact=True)
    for k, t in zip(kiln.linalg.lu(ka), torch.linalg.lu(ta)):
        _close(k, t, **tol)
    for k, t in zip(kiln.lu_unpack(*k_lu), torch.lu_unpack(*t_lu)):
        _close(k, t, **tol)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (2, 3, 5)])
def test_lu_gradient(shape):
    ka, ta = _pair(shape, seed=1, requires_grad=True)
    for lib, leaf in ((kiln, ka), (torch, ta)):
        _, L, U = lib.linalg.lu(leaf)
        wl = lib.from_numpy(np.cos(np.arange(L.numel())).reshape(tuple(L.shape)))
        wu = lib.from_numpy(np.sin(np.arange(U.numel())).reshape(tuple(U.shape)))
        ((L * wl).sum() + (U * wu).sum()).backward()
    _close(ka.grad, ta.grad)
    # the packed factor too
    kb, tb = _pair((3, 3), seed=2, requires_grad=True)
    (kiln.linalg.lu_factor(kb).LU ** 2).sum().backward()
    (torch.linalg.lu_factor(tb).LU ** 2).sum().backward()
    _close(kb.grad, tb.grad)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("b_shape", [(4, 3), (2, 4, 3), (3, 4)])
def test_lu_solve(left, adjoint, b_shape):
    if (b_shape[-2] if left else b_shape[-1]) != 4:
        b_shape = (*b_shape[:-2], b_shape[-1], b_shape[-2])
    ka, ta = _pair((2, 4, 4), seed=3, shift=3.0, requires_grad=True)
    kb, tb = _pair(b_shape, seed=4, requires_grad=True)
    kx = kiln.linalg.lu_solve(*kiln.linalg.lu_factor(ka), kb, left=left, adjoint=adjoint)
    tx = torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb, left=left, adjoint=adjoint)
    _close(kx, tx)
    w = np.cos(np.arange(tx.numel())).reshape(tuple(tx.shape))
    (kx * kiln.from_numpy(w)).sum().backward()
    (tx * torch.from_numpy(w)).sum().backward()
    _close(ka.grad, ta.grad, rtol=1e-8, atol=1e-8)
    _close(kb.grad, tb.grad, rtol=1e-8, atol=1e-8)


def test_legacy_lu_functions():
    ka, ta = _pair((3, 3), seed=5, shift=2.0)
    kb, tb = _pair((3, 2), seed=6)
    k_lu, t_lu = kiln.lu(ka, get_infos=True), torch.lu(ta, get_infos=True)
    for k, t in zip(k_lu, t_lu):
        _close(k, t)
    _close(kiln.lu_solve(kb, *k_lu[:2]), torch.lu_solve(tb, *t_lu[:2]))
    _close(kb.lu_solve(*ka.lu()), tb.lu_solve(*ta.lu()))


def test_solve_ex_and_inv_ex():
    ka, ta = _pair((2, 3, 3), seed=7, shift=2.0)
    kb, tb = _pair((2, 3, 2), seed=8)
    for k, t in zip(kiln.linalg.solve_ex(ka, kb), torch.linalg.solve_ex(ta, tb)):
        _close(k, t)
    for k, t in zip(kiln.linalg.inv_ex(ka), torch.linalg.inv_ex(ta)):
        _close(k, t)
    singular = np.stack([np.eye(3), np.ones((3, 3))])
    ks, ts = kiln.from_numpy(singular.copy()), torch.from_numpy(singular.copy())
    k_info, t_info = kiln.linalg.inv_ex(ks).info, torch.linalg.inv_ex(ts).info
    assert_matches(k_info, t_info, exact=True)
    assert int(k_info[1]) > 0
    _close(kiln.linalg.solve_ex(ks, kb).result[0], torch.linalg.solve_ex(ts, tb).result[0])
    kerror, terror = raised(lambda: kiln.linalg.solve_ex(ks, kb, check_errors=True)), \
        raised(lambda: torch.linalg.solve_ex(ts, tb, check_errors=True))
    assert isinstance(terror, RuntimeError) and isinstance(kerror, kiln.linalg.LinAlgError)


def test_lu_failures():
    LU = kiln.linalg.lu_factor(kiln.eye(3))
    t_LU = torch.linalg.lu_factor(torch.eye(3))
    cases = [
        (lambda: kiln.linalg.lu(kiln.ones(3)), lambda: torch.linalg.lu(torch.ones(3))),
        (lambda: kiln.linalg.lu_factor(kiln.ones(3)), lambda: torch.linalg.lu_factor(torch.ones(3))),
        (lambda: kiln.linalg.lu_factor(kiln.ones(3, 3, dtype=kiln.int64)),
         lambda: torch.linalg.lu_factor(torch.ones(3, 3, dtype=torch.int64))),
        (lambda: kiln.linalg.lu_factor(kiln.ones(3, 3, dtype=kiln.float16)),
         lambda: torch.linalg.lu_factor(torch.ones(3, 3, dtype=torch.float16))),
        (lambda: kiln.linalg.lu_solve(*LU, kiln.ones(4, 2)), lambda: torch.linalg.lu_solve(*t_LU, torch.ones(4, 2))),
        (lambda: kiln.linalg.lu_solve(*LU, kiln.ones(3, 2, dtype=kiln.float64)),
         lambda: torch.linalg.lu_solve(*t_LU, torch.ones(3, 2, dtype=torch.float64))),
    ]
    for kfn, tfn in cases:
        assert_same_failure(raised(kfn), raised(tfn))
    # pivots that are not LAPACK's interchanges are an IndexError, never an out-of-range access
    with pytest.raises(IndexError, match="pivot"):
        kiln.lu_unpack(LU.LU, kiln.tensor([3, 9, 3], dtype=kiln.int32))
