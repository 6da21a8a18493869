"""kiln/linalg/_lowrank.py and _removed.py against torch: svd_lowrank and pca_lowrank (randomized:
singular values against torch.linalg.svdvals on matrices with a clear spectral gap, and
reconstruction error), lobpcg (eigenvalues against torch.linalg.eigh), and the removed
torch.lstsq / solve / symeig / eig / matrix_rank errors (and Tensor methods)."""

import numpy as np
import pytest
import torch

import kiln
from torch_compare import as_kiln_text, assert_same_error


def low_rank_pair(shape, rank, dtype="float64", seed=0, noise=1e-6, batch=()):
    """A [*batch, m, n] matrix of numerical rank ``rank`` (singular values 10, 9, ..., then noise)."""
    rng = np.random.default_rng(seed)
    m, n = shape
    u = np.linalg.qr(rng.standard_normal((*batch, m, rank)))[0]
    v = np.linalg.qr(rng.standard_normal((*batch, n, rank)))[0]
    s = np.arange(10, 10 - rank, -1, dtype=np.float64)
    a = (u * s) @ np.swapaxes(v, -1, -2) + noise * rng.standard_normal((*batch, m, n))
    t = torch.tensor(a).to(getattr(torch, dtype))
    return kiln.tensor(a, dtype=getattr(kiln, dtype)), t


def spd_pair(m, dtype="float64", seed=0):
    """A symmetric positive definite matrix with eigenvalues 1 .. m (a clear gap between neighbours)."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((m, m)))[0]
    a = (q * np.arange(1, m + 1, dtype=np.float64)) @ q.T
    a = (a + a.T) / 2
    return kiln.tensor(a, dtype=getattr(kiln, dtype)), torch.tensor(a).to(getattr(torch, dtype))


def as_np(k):
    return np.asarray(k.detach().to(kiln.float64).tolist(), dtype=np.float64)


# --- svd_lowrank / pca_lowrank ------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tol", [("float64", 1e-8), ("float32", 1e-4)])
@pytest.mark.parametrize("shape", [(30, 12), (12, 30)])
def test_svd_lowrank_recovers_the_spectrum(shape, dtype, tol):
    k, t = low_rank_pair(shape, 4, dtype, noise=0.0)
    U, S, V = kiln.svd_lowrank(k, q=6, niter=2)
    tU, tS, tV = torch.svd_lowrank(t, q=6, niter=2)
    assert tuple(U.shape) == tuple(tU.shape) and tuple(S.shape) == tuple(tS.shape) and tuple(V.shape) == tuple(tV.shape)
    assert U.dtype == getattr(kiln, dtype) and S.dtype == getattr(kiln, dtype)
    expected = torch.linalg.svdvals(t).double().numpy()[:4]
    np.testing.assert_allclose(as_np(S)[:4], expected, rtol=tol * 10, atol=tol * 10)
    recon = as_np(U) @ np.diag(as_np(S)) @ as_np(V).T
    assert np.abs(recon - t.double().numpy()).max() < tol * 100
    np.testing.assert_allclose(as_np(U).T @ as_np(U), np.eye(U.shape[1]), atol=tol * 10)


def test_svd_lowrank_with_m_batched_and_default_q():
    k, t = low_rank_pair((25, 10), 3, batch=(2,), noise=1e-9)
    U, S, V = kiln.svd_lowrank(k)
    assert tuple(U.shape) == (2, 25, 6) and tuple(S.shape) == (2, 6) and tuple(V.shape) == (2, 10, 6)
    np.testing.assert_allclose(as_np(S)[:, :3], torch.linalg.svdvals(t).numpy()[:, :3], rtol=1e-7)
    mean_k, mean_t = k.mean(-2, keepdim=True), t.mean(-2, keepdim=True)
    U, S, V = kiln.svd_lowrank(k, q=4, M=mean_k)
    expected = torch.linalg.svdvals(t - mean_t).numpy()[:, :3]
    np.testing.assert_allclose(as_np(S)[:, :3], expected, rtol=1e-6)
    U, S, V = kiln.svd_lowrank(k[0], q=12)  # q past min(m, n): the reduced factors
    assert tuple(S.shape) == tuple(torch.svd_lowrank(t[0], q=12)[1].shape)


def test_svd_lowrank_gradient_of_singular_values():
    k, t = low_rank_pair((20, 8), 8, noise=0.0)
    k.requires_grad_(True)
    t.requires_grad_(True)
    kiln.svd_lowrank(k, q=8, niter=2)[1].sum().backward()
    torch.linalg.svdvals(t).sum().backward()  # the exact gradient: U V^T
    np.testing.assert_allclose(as_np(k.grad), t.grad.numpy(), atol=1e-8)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank(center):
    k, t = low_rank_pair((40, 9), 3, noise=1e-9, seed=2)
    k, t = k + 5.0, t + 5.0   # an offset that centring removes
    U, S, V = kiln.pca_lowrank(k, center=center)
    tU, tS, tV = torch.pca_lowrank(t, center=center)
    assert tuple(S.shape) == tuple(tS.shape) == (6,)
    ref = t - t.mean(-2, keepdim=True) if center else t
    np.testing.assert_allclose(as_np(S)[:3], torch.linalg.svdvals(ref).numpy()[:3], rtol=1e-6)
    np.testing.assert_allclose(as_np(S)[:3], tS.numpy()[:3], rtol=1e-6)
    recon = as_np(U) @ np.diag(as_np(S)) @ as_np(V).T
    assert np.abs(recon - ref.numpy()).max() < 1e-6


def test_lowrank_errors():
    k, t = low_rank_pair((10, 6), 2)
    assert_same_error(lambda: kiln.pca_lowrank(k, q=7), lambda: torch.pca_lowrank(t, q=7))
    assert_same_error(lambda: kiln.pca_lowrank(k, q=-1), lambda: torch.pca_lowrank(t, q=-1))
    assert_same_error(lambda: kiln.pca_lowrank(k, niter=-1), lambda: torch.pca_lowrank(t, niter=-1))
    assert_same_error(lambda: kiln.svd_lowrank(k, q=-1), lambda: torch.svd_lowrank(t, q=-1))
    assert_same_error(lambda: kiln.svd_lowrank(k.long()), lambda: torch.svd_lowrank(t.long()))


# --- lobpcg -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tol", [("float64", 1e-7), ("float32", 1e-3)])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_lobpcg_eigenvalues(k, largest, dtype, tol):
    ka, ta = spd_pair(24, dtype)
    E, X = kiln.lobpcg(ka, k=k, largest=largest)
    tE, tX = torch.lobpcg(ta, k=k, largest=largest)
    assert tuple(E.shape) == tuple(tE.shape) and tuple(X.shape) == tuple(tX.shape)
    assert E.dtype == getattr(kiln, dtype)
    evals = torch.linalg.eigh(ta.double())[0].numpy()
    expected = evals[::-1][:k] if largest else evals[:k]
    np.testing.assert_allclose(as_np(E), expected, rtol=tol, atol=tol)
    a, x = as_np(ka), as_np(X)
    np.testing.assert_allclose(a @ x, x * as_np(E), atol=tol * 30)    # eigenvectors
    np.testing.assert_allclose(x.T @ x, np.eye(k), atol=tol * 10)


def test_lobpcg_with_start_n_niter_tol_and_batch():
    ka, ta = spd_pair(30, seed=3)
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((30, 4))
    E, X = kiln.lobpcg(ka, X=kiln.tensor(x0), tol=1e-10)
    tE, tX = torch.lobpcg(ta, X=torch.tensor(x0), tol=1e-10)
    assert tuple(E.shape) == tuple(tE.shape) == (4,)
    np.testing.assert_allclose(as_np(E), tE.numpy(), rtol=1e-8)
    E, X = kiln.lobpcg(ka, k=2, n=5, niter=-1)
    np.testing.assert_allclose(as_np(E), [30.0, 29.0], rtol=1e-7)
    E, X = kiln.lobpcg(ka, k=2, niter=0)      # no iteration: Ritz values of the random start, below the top
    assert (as_np(E) <= 30.0 + 1e-9).all()
    kb = kiln.stack([ka, ka * 2])
    E, X = kiln.lobpcg(kb, k=2)
    assert tuple(E.shape) == (2, 2) and tuple(X.shape) == (2, 30, 2)
    np.testing.assert_allclose(as_np(E), [[30.0, 29.0], [60.0, 58.0]], rtol=1e-7)


def test_lobpcg_errors():
    ka, ta = spd_pair(20)
    assert_same_error(lambda: kiln.lobpcg(ka, k=7), lambda: torch.lobpcg(ta, k=7))
    assert_same_error(lambda: kiln.lobpcg(ka[:, :5]), lambda: torch.lobpcg(ta[:, :5]))
    assert_same_error(lambda: kiln.lobpcg(ka.long(), k=2), lambda: torch.lobpcg(ta.long(), k=2))
    with pytest.raises(NotImplementedError, match="iK and tracker"):   # B is supported: test_linalg_cholesky_solve_lobpcg_grads.py
        kiln.lobpcg(ka, k=2, iK=ka)


# --- removed functions --------------------------------------------------------------------------
REMOVED = [
    ("lstsq", lambda lib, a: lib.lstsq(a, a)),
    ("solve", lambda lib, a: lib.solve(a, a)),
    ("symeig", lambda lib, a: lib.symeig(a, True)),
    ("eig", lambda lib, a: lib.eig(a)),
    ("matrix_rank", lambda lib, a: lib.matrix_rank(a)),
    ("Tensor.lstsq", lambda lib, a: a.lstsq(a)),
    ("Tensor.solve", lambda lib, a: a.solve(a)),
    ("Tensor.symeig", lambda lib, a: a.symeig(eigenvectors=True)),
    ("Tensor.eig", lambda lib, a: a.eig(True)),
]


@pytest.mark.parametrize("name, call", REMOVED, ids=[r[0] for r in REMOVED])
def test_removed_functions_raise_like_torch(name, call):
    ka, ta = spd_pair(4)
    error = assert_same_error(lambda: call(kiln, ka), lambda: call(torch, ta))
    assert isinstance(error, RuntimeError)
    assert "kiln.linalg" in str(error) and "torch" not in str(error)


def test_removed_functions_keep_torch_arity():
    ka, ta = spd_pair(4)
    assert_same_error(lambda: kiln.lstsq(ka), lambda: torch.lstsq(ta), message=False)
    assert not hasattr(torch.Tensor, "matrix_rank") and not hasattr(kiln.Tensor, "matrix_rank")
    assert as_kiln_text("torch.linalg.eigh") == "kiln.linalg.eigh"
