"""Cholesky, QR, eigh, SVD, triangular solves and their composites (pinv,
matrix_rank, lstsq, cond, spectral matrix norms, cholesky_solve/inverse, the
torch.* spellings) against torch: values over batches, empty matrices and both
dtypes; gradients through each decomposition (on inputs and losses where the
gradient is well defined: symmetric matrices built from a leaf, losses that do
not depend on the signs of singular or eigen vectors); LinAlgError and torch's
words for bad input. Singular/eigen vectors are compared up to each column's
sign (LAPACK implementations may choose either)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised

DTYPES = ["float32", "float64"]


def _array(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _pair(a, dtype="float64", requires_grad=False):
    a = np.ascontiguousarray(a).astype(dtype)
    k, t = kiln.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t


def _tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-9}


def _close(k, t, dtype="float64", **kw):
    assert tuple(k.shape) == tuple(t.shape), f"shape {tuple(k.shape)} != torch {tuple(t.shape)}"
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    torch.testing.assert_close(torch.from_numpy(k.detach().numpy().copy()), t.detach(), **(kw or _tol(dtype)))


def _spd(n, batch=(), seed=0):
    x = _array((*batch, n, n), seed)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sign_fixed(vectors):
    """Each column (last-but-one axis) flipped so that its largest-magnitude entry is positive."""
    v = vectors.detach().numpy() if hasattr(vectors, "detach") else vectors
    v = np.asarray(v, dtype=np.float64)
    index = np.abs(v).argmax(-2)
    pick = np.take_along_axis(v, index[..., None, :], -2)
    return v * np.sign(pick)


def _same_up_to_sign(k, t, dtype):
    np.testing.assert_allclose(_sign_fixed(k), _sign_fixed(t), **_tol(dtype))


def _linalg_error_matches(kfn, tfn):
    kerror, terror = raised(kfn), raised(tfn)
    assert terror is not None and isinstance(terror, torch.linalg.LinAlgError)
    assert isinstance(kerror, kiln.linalg.LinAlgError), f"kiln raised {kerror!r}"
    assert str(kerror) == str(terror).replace("torch", "kiln")


# --- Cholesky ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_values(dtype, batch, upper):
    a = _spd(4, batch)
    # the triangle LAPACK does not read holds garbage: both libraries must ignore the same one
    noise = np.triu(_array(a.shape, 9), 1) if not upper else np.tril(_array(a.shape, 9), -1)
    ka, ta = _pair(a + noise, dtype)
    _close(kiln.linalg.cholesky(ka, upper=upper), torch.linalg.cholesky(ta, upper=upper), dtype)
    _close(kiln.cholesky(ka, upper), torch.cholesky(ta, upper), dtype)
    k_ex, t_ex = kiln.linalg.cholesky_ex(ka, upper=upper), torch.linalg.cholesky_ex(ta, upper=upper)
    _close(k_ex.L, t_ex.L, dtype)
    assert_matches(k_ex.info, t_ex.info, exact=True)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient(upper):
    x = _array((2, 4, 4), 1)
    w = _array((2, 4, 4), 2)
    kx, tx = _pair(x, requires_grad=True)
    kw, tw = _pair(w)
    for lib, leaf, weight in ((kiln, kx, kw), (torch, tx, tw)):
        spd = leaf @ leaf.mT + 4 * lib.eye(4, dtype=lib.float64)
        (lib.linalg.cholesky(spd, upper=upper) * weight).sum().backward()
    _close(kx.grad, tx.grad)


def test_cholesky_failures():
    not_pd = np.diag([1.0, -1.0, 2.0])
    ka, ta = _pair(not_pd)
    _linalg_error_matches(lambda: kiln.linalg.cholesky(ka), lambda: torch.linalg.cholesky(ta))
    kb, tb = _pair(np.stack([np.eye(3), not_pd]))
    _linalg_error_matches(lambda: kiln.linalg.cholesky(kb), lambda: torch.linalg.cholesky(tb))
    assert_matches(kiln.linalg.cholesky_ex(kb).info, torch.linalg.cholesky_ex(tb).info, exact=True)
    for make in (lambda L: L.ones(3, 3, dtype=L.float16), lambda L: L.ones(3, 3, dtype=L.int64),
                 lambda L: L.ones(3), lambda L: L.ones(2, 3)):
        assert_same_failure(raised(lambda: kiln.linalg.cholesky(make(kiln))),
                            raised(lambda: torch.linalg.cholesky(make(torch))))


def test_cholesky_solve_and_inverse():
    a = _spd(4, (2,))
    b = _array((2, 4, 3), 3)
    for upper in (False, True):
        ka, ta = _pair(a)
        kb, tb = _pair(b, requires_grad=True)
        kL, tL = kiln.linalg.cholesky(ka, upper=upper), torch.linalg.cholesky(ta, upper=upper)
        kx, tx = kiln.cholesky_solve(kb, kL, upper), torch.cholesky_solve(tb, tL, upper)
        _close(kx, tx)
        kx.sum().backward()
        tx.sum().backward()
        _close(kb.grad, tb.grad)
        _close(kiln.cholesky_inverse(kL[0], upper), torch.cholesky_inverse(tL[0], upper))


# --- Triangular solves ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_solve_triangular(dtype, upper, left, unitriangular):
    a = _array((2, 4, 4), 4) + 3 * np.eye(4)
    b = _array((3, 1, 4, 2) if left else (3, 1, 2, 4), 5)  # batch dims broadcast against A's
    ka, ta = _pair(a, dtype, requires_grad=True)
    kb, tb = _pair(b, dtype, requires_grad=True)
    kx = kiln.linalg.solve_triangular(ka, kb, upper=upper, left=left, unitriangular=unitriangular)
    tx = torch.linalg.solve_triangular(ta, tb, upper=upper, left=left, unitriangular=unitriangular)
    _close(kx, tx, dtype)
    weight = _array(tuple(tx.shape), 6)
    (kx * kiln.from_numpy(weight.astype(dtype))).sum().backward()
    (tx * torch.from_numpy(weight.astype(dtype))).sum().backward()
    _close(ka.grad, ta.grad, dtype)
    _close(kb.grad, tb.grad, dtype)


def test_triangular_solve_legacy():
    a = np.triu(_array((4, 4), 7)) + 3 * np.eye(4)
    b = _array((4, 2), 8)
    ka, ta = _pair(a)
    kb, tb = _pair(b)
    for transpose in (False, True):
        for upper in (True, False):
            k, t = kiln.triangular_solve(kb, ka, upper, transpose), torch.triangular_solve(tb, ta, upper, transpose)
            _close(k.solution, t.solution)
            _close(k.cloned_coefficient, t.cloned_coefficient)


def test_solve_triangular_failures():
    cases = [
        lambda L: L.linalg.solve_triangular(L.ones(3, 3, dtype=L.float16), L.ones(3, 1, dtype=L.float16), upper=True),
        lambda L: L.linalg.solve_triangular(L.ones(3), L.ones(3, 1), upper=True),
        lambda L: L.linalg.solve_triangular(L.ones(3, 3), L.ones(4, 2), upper=True),
        lambda L: L.linalg.solve_triangular(L.ones(3, 3), L.ones(2, 4), upper=True, left=False),
    ]
    for case in cases:
        assert_same_failure(raised(lambda: case(kiln)), raised(lambda: case(torch)))


# --- QR ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (0, 3), (3, 0)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values(dtype, shape, mode):
    ka, ta = _pair(_array(shape, 10), dtype)
    kq, kr = kiln.linalg.qr(ka, mode)
    tq, tr = torch.linalg.qr(ta, mode)
    assert tuple(kq.shape) == tuple(tq.shape) and tuple(kr.shape) == tuple(tr.shape)
    # Householder QR fixes the signs (R's diagonal is -sign(a) * norm): both libraries agree.
    _close(kr, tr, dtype)
    if mode != "r":
        if mode == "complete" and shape[-2] > shape[-1]:  # the extra columns are any orthonormal completion
            _close(kq[..., : shape[-1]], tq[..., : shape[-1]], dtype)
            _close(kq.mT @ kq, tq.mT @ tq, dtype)
        else:
            _close(kq, tq, dtype)


@pytest.mark.parametrize("shape,mode", [((5, 3), "reduced"), ((3, 5), "reduced"), ((4, 4), "complete"),
                                        ((2, 4, 3), "reduced")])
def test_qr_gradient(shape, mode):
    ka, ta = _pair(_array(shape, 11), requires_grad=True)
    kq, kr = kiln.linalg.qr(ka, mode)
    tq, tr = torch.linalg.qr(ta, mode)
    wq, wr = _array(tuple(tq.shape), 12), _array(tuple(tr.shape), 13)
    ((kq * kiln.from_numpy(wq)).sum() + (kr * kiln.from_numpy(wr)).sum()).backward()
    ((tq * torch.from_numpy(wq)).sum() + (tr * torch.from_numpy(wr)).sum()).backward()
    _close(ka.grad, ta.grad)


def test_qr_failures():
    for mode, shape in (("r", (3, 3)), ("complete", (4, 3))):
        ka, ta = _pair(_array(shape), requires_grad=True)
        kerror = raised(lambda: kiln.linalg.qr(ka, mode)[1].sum().backward())
        terror = raised(lambda: torch.linalg.qr(ta, mode)[1].sum().backward())
        assert_same_failure(kerror, terror, message=False)  # kiln adds the backward node's name
        assert str(kerror).startswith(str(terror))
    for make in (lambda L: L.linalg.qr(L.ones(3, 3), mode="foo"), lambda L: L.linalg.qr(L.ones(3)),
                 lambda L: L.linalg.qr(L.ones(3, 3, dtype=L.int64)),
                 lambda L: L.linalg.qr(L.ones(3, 3, dtype=L.float16))):
        assert_same_failure(raised(lambda: make(kiln)), raised(lambda: make(torch)))
    kq, kr = kiln.qr(kiln.from_numpy(_array((5, 3))), some=False)
    tq, tr = torch.qr(torch.from_numpy(_array((5, 3))), some=False)
    assert tuple(kq.shape) == tuple(tq.shape) == (5, 5)
    _close(kr, tr)


# --- eigh -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_values(dtype, batch, uplo):
    x = _array((*batch, 5, 5), 20)  # not symmetric: UPLO picks the triangle read
    ka, ta = _pair(x, dtype)
    kw, kv = kiln.linalg.eigh(ka, UPLO=uplo)
    tw, tv = torch.linalg.eigh(ta, UPLO=uplo)
    _close(kw, tw, dtype)
    _same_up_to_sign(kv, tv, dtype)
    _close(kiln.linalg.eigvalsh(ka, UPLO=uplo), torch.linalg.eigvalsh(ta, UPLO=uplo), dtype)


def test_eigh_gradient():
    kx, tx = _pair(_array((2, 4, 4), 21), requires_grad=True)
    ww, wv = _array((2, 4), 22), _array((2, 4, 4), 23)
    for lib, leaf in ((kiln, kx), (torch, tx)):
        values, vectors = lib.linalg.eigh(leaf + leaf.mT)
        # vectors ** 2 does not depend on each eigenvector's sign
        loss = (values * lib.from_numpy(ww)).sum() + (vectors ** 2 * lib.from_numpy(wv)).sum()
        loss.backward()
    _close(kx.grad, tx.grad, rtol=1e-7, atol=1e-7)
    # eigenvalues alone, through eigvalsh (which computes the vectors it needs)
    ky, ty = _pair(_array((4, 4), 24), requires_grad=True)
    (kiln.linalg.eigvalsh(ky + ky.mT) * kiln.arange(4.0, dtype=kiln.float64)).sum().backward()
    (torch.linalg.eigvalsh(ty + ty.mT) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    _close(ky.grad, ty.grad)


def test_eigh_failures():
    for make in (lambda L: L.linalg.eigh(L.ones(3, 3), UPLO="X"), lambda L: L.linalg.eigh(L.ones(3)),
                 lambda L: L.linalg.eigh(L.ones(2, 3)), lambda L: L.linalg.eigh(L.ones(3, 3, dtype=L.int64)),
                 lambda L: L.linalg.eigvalsh(L.ones(3, 3, dtype=L.float16))):
        assert_same_failure(raised(lambda: make(kiln)), raised(lambda: make(torch)))


# --- SVD --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (3, 0), (0, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_values(dtype, shape, full_matrices):
    ka, ta = _pair(_array(shape, 30), dtype)
    ku, ks, kvh = kiln.linalg.svd(ka, full_matrices=full_matrices)
    tu, ts, tvh = torch.linalg.svd(ta, full_matrices=full_matrices)
    assert tuple(ku.shape) == tuple(tu.shape) and tuple(kvh.shape) == tuple(tvh.shape)
    _close(ks, ts, dtype)
    k = min(shape[-2:])
    if k == 0:  # nothing to factor: the full bases are identities, the thin ones empty
        _close(ku, tu, dtype)
        _close(kvh, tvh, dtype)
        return
    # the first k columns of U (rows of Vh) are unique up to sign; the rest is any completion
    _same_up_to_sign(ku[..., :k], tu[..., :k].numpy(), dtype)
    _same_up_to_sign(kvh[..., :k, :].mT, tvh[..., :k, :].mT.numpy(), dtype)
    _close(ku.mT @ ku, tu.mT @ tu, dtype)
    _close((ku[..., :k] * ks.unsqueeze(-2)) @ kvh[..., :k, :], ta, dtype)
    _close(kiln.linalg.svdvals(ka), torch.linalg.svdvals(ta), dtype)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_gradient(shape, full_matrices):
    ka, ta = _pair(_array(shape, 31), requires_grad=True)
    grads = []
    for lib, leaf in ((kiln, ka), (torch, ta)):
        U, S, Vh = lib.linalg.svd(leaf, full_matrices=full_matrices)
        wu, ws, wv = (lib.from_numpy(_array(tuple(t.shape), s)) for t, s in ((U, 32), (S, 33), (Vh, 34)))
        # squares do not depend on the singular vectors' signs
        ((U ** 2 * wu).sum() + (S * ws).sum() + (Vh ** 2 * wv).sum()).backward()
        grads.append(leaf.grad)
    _close(grads[0], grads[1], rtol=1e-7, atol=1e-7)


def test_svdvals_and_legacy_svd():
    ka, ta = _pair(_array((5, 3), 35), requires_grad=True)
    (kiln.linalg.svdvals(ka) ** 2).sum().backward()
    (torch.linalg.svdvals(ta) ** 2).sum().backward()
    _close(ka.grad, ta.grad)
    for some in (True, False):
        k, t = kiln.svd(ka.detach(), some=some), torch.svd(ta.detach(), some=some)
        assert tuple(k.U.shape) == tuple(t.U.shape) and tuple(k.V.shape) == tuple(t.V.shape)
        _close(k.S, t.S)
        _same_up_to_sign(k.V[..., :3], t.V[..., :3].numpy(), "float64")
    k, t = kiln.svd(ka.detach(), compute_uv=False), torch.svd(ta.detach(), compute_uv=False)
    for a, b in zip(k, t):
        _close(a, b)


def test_svd_failures():
    for make in (lambda L: L.linalg.svd(L.ones(3)), lambda L: L.linalg.svd(L.ones(3, 3, dtype=L.int64)),
                 lambda L: L.linalg.svd(L.ones(3, 3, dtype=L.float16)),
                 lambda L: L.linalg.svdvals(L.ones(3, 3, dtype=L.bfloat16))):
        assert_same_failure(raised(lambda: make(kiln)), raised(lambda: make(torch)))


# --- Composites -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv(shape):
    ka, ta = _pair(_array(shape, 40), requires_grad=True)
    kp, tp = kiln.linalg.pinv(ka), torch.linalg.pinv(ta)
    _close(kp, tp)
    weight = _array(tuple(tp.shape), 41)
    (kp * kiln.from_numpy(weight)).sum().backward()
    (tp * torch.from_numpy(weight)).sum().backward()
    _close(ka.grad, ta.grad, rtol=1e-7, atol=1e-7)
    _close(kiln.pinverse(ka.detach()), torch.pinverse(ta.detach()))


def test_pinv_rank_deficient_and_hermitian():
    low_rank = _array((5, 2), 42) @ _array((2, 4), 43)
    ka, ta = _pair(low_rank)
    _close(kiln.linalg.pinv(ka), torch.linalg.pinv(ta))
    _close(kiln.linalg.pinv(ka, rtol=0.5), torch.linalg.pinv(ta, rtol=0.5))
    ks, ts = _pair(_spd(4) - 6 * np.eye(4))
    _close(kiln.linalg.pinv(ks, hermitian=True), torch.linalg.pinv(ts, hermitian=True))


def test_matrix_rank():
    low_rank = np.stack([_array((5, 2), 44) @ _array((2, 4), 45), _array((5, 4), 46)])
    ka, ta = _pair(low_rank)
    assert_matches(kiln.linalg.matrix_rank(ka), torch.linalg.matrix_rank(ta), exact=True)
    for kw in ({"atol": 1.0}, {"rtol": 0.3}, {"atol": 0.5, "rtol": 0.1}, {"hermitian": True}):
        sym = low_rank[..., :4, :] + np.swapaxes(low_rank[..., :4, :], -1, -2) if kw.get("hermitian") else low_rank
        k2, t2 = _pair(sym)
        assert_matches(kiln.linalg.matrix_rank(k2, **kw), torch.linalg.matrix_rank(t2, **kw), exact=True)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p):
    ka, ta = _pair(_array((2, 4, 4), 47) + 2 * np.eye(4))
    _close(kiln.linalg.cond(ka, p), torch.linalg.cond(ta, p), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
@pytest.mark.parametrize("dim,keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False)])
def test_spectral_matrix_norms(ord, dim, keepdim):
    ka, ta = _pair(_array((4, 3, 5), 48), requires_grad=True)
    kn = kiln.linalg.matrix_norm(ka, ord, dim, keepdim)
    tn = torch.linalg.matrix_norm(ta, ord, dim, keepdim)
    _close(kn, tn)
    kn.sum().backward()
    tn.sum().backward()
    _close(ka.grad, ta.grad, rtol=1e-7, atol=1e-7)
    _close(kiln.norm(ka.detach(), p="nuc"), torch.norm(ta.detach(), p="nuc")) if ka.dim() == 2 else None
    _close(kiln.linalg.norm(ka.detach()[0], ord), torch.linalg.norm(ta.detach()[0], ord))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape_a,shape_b", [((6, 3), (6, 2)), ((3, 6), (3, 2)), ((2, 5, 3), (2, 5, 2)), ((2, 5, 3), (2, 5)),
                                             ((6, 3), (6,))])
def test_lstsq(driver, shape_a, shape_b):
    ka, ta = _pair(_array(shape_a, 50), requires_grad=True)
    kb, tb = _pair(_array(shape_b, 51), requires_grad=True)
    k = kiln.linalg.lstsq(ka, kb, driver=driver)
    t = torch.linalg.lstsq(ta, tb, driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        _close(getattr(k, name), getattr(t, name), rtol=1e-7, atol=1e-7)
    k.solution.sum().backward()
    t.solution.sum().backward()
    _close(ka.grad, ta.grad, rtol=1e-7, atol=1e-7)
    _close(kb.grad, tb.grad, rtol=1e-7, atol=1e-7)


def test_lstsq_rank_deficient_gives_the_minimum_norm_solution():
    a = _array((6, 2), 52) @ _array((2, 4), 53)
    ka, ta = _pair(a)
    kb, tb = _pair(_array((6, 3), 54))
    k, t = kiln.linalg.lstsq(ka, kb), torch.linalg.lstsq(ta, tb)
    assert int(k.rank) == int(t.rank) == 2
    _close(k.solution, t.solution, rtol=1e-7, atol=1e-7)


def test_lstsq_failures():
    for make in (lambda L: L.linalg.lstsq(L.ones(5, 3), L.ones(4, 2)),
                 lambda L: L.linalg.lstsq(L.ones(5, 3), L.ones(5, 2), driver="foo")):
        assert_same_failure(raised(lambda: make(kiln)), raised(lambda: make(torch)))


# --- finfo / iinfo ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo(name):
    k, t = kiln.finfo(getattr(kiln, name)), torch.finfo(getattr(torch, name))
    for attribute in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(k, attribute) == getattr(t, attribute), attribute
    assert repr(k) == repr(t)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo(name):
    k, t = kiln.iinfo(getattr(kiln, name)), torch.iinfo(getattr(torch, name))
    assert (k.bits, k.min, k.max, k.dtype) == (t.bits, t.min, t.max, t.dtype)
    assert repr(k) == repr(t)


def test_finfo_and_iinfo_reject_the_other_kind():
    assert_same_failure(raised(lambda: kiln.finfo(kiln.int32)), raised(lambda: torch.finfo(torch.int32)))
    assert_same_failure(raised(lambda: kiln.iinfo(kiln.float32)), raised(lambda: torch.iinfo(torch.float32)))
    assert kiln.finfo().eps == torch.finfo().eps
