"""Complex linear algebra against torch: the general eigendecomposition (linalg.eig, eigvals;
complex results for real input too); solve, inv, det, slogdet, lu_factor, cholesky, qr,
eigh, svd and solve_triangular of complex matrices; and their gradients."""

import re

import numpy as np
import pytest
import torch

import kiln
from complex_compare import as_numpy as _np
from complex_compare import assert_close as _close
from complex_compare import dtype_name as _name
from complex_compare import to_kiln as _k
from torch_compare import as_kiln_text, raised

FLOATS = [torch.float32, torch.float64]
COMPLEX = [torch.complex64, torch.complex128]


def _matrix(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=g)


def _tol(dtype):
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def _sorted_values(values):
    v = _np(values)
    if v.size == 0:
        return v
    return np.sort_complex(v.reshape(-1, v.shape[-1])).reshape(v.shape)


# --- linalg.eig / eigvals ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (1, 1), (2, 0, 0)])
def test_eig_values_and_vectors(dtype, shape):
    A = _matrix(shape, dtype, seed=1)
    L, V = kiln.linalg.eig(_k(A))
    tL, tV = torch.linalg.eig(A)
    assert _name(L.dtype) == _name(tL.dtype) and _name(V.dtype) == _name(tV.dtype)
    assert tuple(L.shape) == tuple(tL.shape) and tuple(V.shape) == tuple(tV.shape)
    tol = _tol(dtype) * 10
    np.testing.assert_allclose(_sorted_values(L), _sorted_values(tL), rtol=tol, atol=tol)
    a, l, v = _np(A).astype(np.complex128), _np(L), _np(V)
    np.testing.assert_allclose(a @ v, v * l[..., None, :], rtol=tol, atol=tol)  # A V = V diag(L)
    if v.size:
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=tol)  # unit columns, as LAPACK's
    _close(kiln.linalg.eigvals(_k(A)), L)


def test_eig_of_a_rotation_is_a_conjugate_pair():
    A = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64)
    L, V = kiln.linalg.eig(_k(A))
    assert sorted(L.tolist(), key=lambda z: z.imag) == [-1j, 1j]
    np.testing.assert_allclose(_np(V)[:, 1], np.conj(_np(V)[:, 0]))
    tL, tV = torch.linalg.eig(A)
    _close(L, tL, rtol=1e-12)
    _close(V, tV, rtol=1e-12)  # same LAPACK routine: same vectors, same phases


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_eig_gradients_match_torch(dtype):
    A = _matrix((3, 4, 4), dtype, seed=2).requires_grad_()
    kA = _k(A)
    w = torch.linspace(0.5, 2.0, 4, dtype=torch.float64)

    def loss(module, M, weights):
        L, V = module.linalg.eig(M)
        # invariant to the order of the eigenpairs and to each eigenvector's phase
        return (L.real * L.imag).sum() + (L.abs() ** 2).sum() + (V.abs() ** 2 * L.real.unsqueeze(-2)).sum()

    loss(torch, A, w).backward()
    loss(kiln, kA, _k(w)).backward()
    _close(kA.grad, A.grad, rtol=1e-8, atol=1e-9)

    B = A.detach().clone().requires_grad_()
    kB = _k(B)
    torch.linalg.eigvals(B).abs().sum().backward()
    kiln.linalg.eigvals(kB).abs().sum().backward()
    _close(kB.grad, B.grad, rtol=1e-8, atol=1e-9)


def test_eig_errors_match_torch():
    def same(kfn, tfn):
        with pytest.raises(Exception) as t_err:
            tfn()
        with pytest.raises(type(t_err.value)) as k_err:
            kfn()
        assert str(k_err.value).replace("kiln", "torch") == str(t_err.value)

    same(lambda: kiln.linalg.eig(kiln.ones(2, 3)), lambda: torch.linalg.eig(torch.ones(2, 3)))
    same(lambda: kiln.linalg.eig(kiln.ones(3)), lambda: torch.linalg.eig(torch.ones(3)))
    bad = torch.tensor([[1.0, float("nan")], [0.0, 1.0]])
    same(lambda: kiln.linalg.eig(_k(bad)), lambda: torch.linalg.eig(bad))
    A = _matrix((3, 3), torch.complex128, seed=3).requires_grad_()
    kA = _k(A)
    # a loss that depends on the eigenvectors' phase is ill-defined: torch and kiln refuse its backward
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        torch.linalg.eig(A)[1].real.sum().backward()
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        kiln.linalg.eig(kA)[1].real.sum().backward()


# --- complex solve, inv, det, slogdet ------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_solve_inv_det(dtype):
    A = _matrix((2, 4, 4), dtype, seed=4) + 2 * torch.eye(4, dtype=dtype)
    B = _matrix((2, 4, 3), dtype, seed=5)
    tol = _tol(dtype) * 10
    _close(kiln.linalg.solve(_k(A), _k(B)), torch.linalg.solve(A, B), rtol=tol, atol=tol)
    _close(kiln.linalg.solve(_k(A), _k(B[..., 0])), torch.linalg.solve(A, B[..., 0]), rtol=tol, atol=tol)
    _close(kiln.linalg.solve(_k(A), _k(B.mT), left=False), torch.linalg.solve(A, B.mT, left=False), rtol=tol, atol=tol)
    _close(kiln.linalg.inv(_k(A)), torch.linalg.inv(A), rtol=tol, atol=tol)
    _close(kiln.linalg.det(_k(A)), torch.linalg.det(A), rtol=tol, atol=tol)
    k_sign, k_log = kiln.linalg.slogdet(_k(A))
    t_sign, t_log = torch.linalg.slogdet(A)
    _close(k_sign, t_sign, rtol=tol, atol=tol)
    _close(k_log, t_log, rtol=tol, atol=tol)
    LU, piv = kiln.linalg.lu_factor(_k(A))
    tLU, tpiv = torch.linalg.lu_factor(A)
    _close(LU, tLU, rtol=tol, atol=tol)
    assert piv.tolist() == tpiv.tolist()


def test_complex_solve_inv_det_gradients():
    dtype = torch.complex128
    A = (_matrix((3, 3), dtype, seed=6) + 2 * torch.eye(3, dtype=dtype)).requires_grad_()
    B = _matrix((3, 2), dtype, seed=7).requires_grad_()
    W = _matrix((3, 2), dtype, seed=8)
    kA, kB = _k(A), _k(B)
    (torch.linalg.solve(A, B) * W).real.sum().backward()
    (kiln.linalg.solve(kA, kB) * _k(W)).real.sum().backward()
    _close(kA.grad, A.grad, rtol=1e-10)
    _close(kB.grad, B.grad, rtol=1e-10)
    for fn in (lambda m, x: m.linalg.inv(x).abs().sum(), lambda m, x: m.linalg.det(x).abs(),
               lambda m, x: m.linalg.det(x).real, lambda m, x: m.linalg.slogdet(x)[1]):
        a = A.detach().clone().requires_grad_()
        ka = _k(a)
        fn(torch, a).backward()
        fn(kiln, ka).backward()
        _close(ka.grad, a.grad, rtol=1e-10)


def test_singular_complex_matrix_is_a_linalg_error():
    A = torch.zeros(3, 3, dtype=torch.complex64)
    # torch's LinAlgError and kiln's are each library's own class: the classes correspond, the texts are equal
    for k_call, t_call in ((lambda: kiln.linalg.solve(_k(A), kiln.ones(3, 1, dtype=kiln.complex64)),
                            lambda: torch.linalg.solve(A, torch.ones(3, 1, dtype=torch.complex64))),
                           (lambda: kiln.linalg.inv(_k(A)), lambda: torch.linalg.inv(A))):
        torch_error = raised(t_call)
        assert isinstance(torch_error, torch.linalg.LinAlgError)
        with pytest.raises(kiln.linalg.LinAlgError, match=f"^{re.escape(as_kiln_text(str(torch_error)))}$"):
            k_call()
    assert kiln.linalg.det(_k(A)).item() == 0


# --- complex cholesky, qr, eigh, svd -------------------------------------------------------------

def _hermitian_pd(n, dtype, seed, batch=()):
    X = _matrix((*batch, n, n), dtype, seed=seed)
    return X @ X.mH + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_decomposition_values(dtype):
    tol = _tol(dtype) * 10
    A = _hermitian_pd(4, dtype, seed=9, batch=(2,))
    for upper in (False, True):
        _close(kiln.linalg.cholesky(_k(A), upper=upper), torch.linalg.cholesky(A, upper=upper), rtol=tol, atol=tol)
    w, V = kiln.linalg.eigh(_k(A))
    tw, tV = torch.linalg.eigh(A)
    _close(w, tw, rtol=tol, atol=tol)  # real eigenvalues
    np.testing.assert_allclose(_np(A) @ _np(V), _np(V) * _np(w)[..., None, :], rtol=tol, atol=tol * 10)
    _close(kiln.linalg.eigvalsh(_k(A)), torch.linalg.eigvalsh(A), rtol=tol, atol=tol)
    M = _matrix((2, 5, 3), dtype, seed=10)
    for mode in ("reduced", "complete", "r"):
        Q, R = kiln.linalg.qr(_k(M), mode=mode)
        tQ, tR = torch.linalg.qr(M, mode=mode)
        _close(R.abs(), tR.abs(), rtol=tol, atol=tol)
        if mode != "r":
            np.testing.assert_allclose(_np(Q) @ _np(R), _np(M), rtol=tol, atol=tol * 10)
    for full in (False, True):
        U, S, Vh = kiln.linalg.svd(_k(M), full_matrices=full)
        tU, tS, tVh = torch.linalg.svd(M, full_matrices=full)
        _close(S, tS, rtol=tol, atol=tol)
        k = S.shape[-1]
        recon = (_np(U)[..., :, :k] * _np(S)[..., None, :]) @ _np(Vh)[..., :k, :]
        np.testing.assert_allclose(recon, _np(M), rtol=tol, atol=tol * 10)
    _close(kiln.linalg.svdvals(_k(M)), torch.linalg.svdvals(M), rtol=tol, atol=tol)
    _close(kiln.linalg.matrix_norm(_k(M), "nuc"), torch.linalg.matrix_norm(M, "nuc"), rtol=tol, atol=tol)
    _close(kiln.linalg.pinv(_k(M)), torch.linalg.pinv(M), rtol=tol * 10, atol=tol * 10)


def test_complex_decomposition_gradients():
    dtype = torch.complex128
    A = _hermitian_pd(3, dtype, seed=11).requires_grad_()
    W = _matrix((3, 3), dtype, seed=12)
    for fn in (lambda m, a, w: (m.linalg.cholesky(a) * w).real.sum(),
               lambda m, a, w: (m.linalg.cholesky(a, upper=True) * w).imag.sum(),
               lambda m, a, w: m.linalg.eigvalsh(a).pow(2).sum(),
               lambda m, a, w: (m.linalg.eigh(a)[1].abs() ** 2 * m.linalg.eigh(a)[0]).sum(),
               lambda m, a, w: (m.linalg.qr(a)[1] * w).real.sum() + (m.linalg.qr(a)[0].abs() ** 2 * w.real).sum(),
               lambda m, a, w: (m.linalg.solve_triangular(m.triu(a), w, upper=True) * w).real.sum()):
        a = A.detach().clone().requires_grad_()
        ka = _k(a)
        fn(torch, a, W).backward()
        fn(kiln, ka, _k(W)).backward()
        _close(ka.grad, a.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_complex_svd_gradients_match_torch(shape, full):
    A = _matrix(shape, torch.complex128, seed=13).requires_grad_()
    kA = _k(A)
    k = min(shape)
    w_u, w_v = torch.linspace(0.3, 1.7, shape[0] * k).reshape(shape[0], k), torch.linspace(1.1, 0.2, k * shape[1])

    def loss(module, M, wu, wv):
        U, S, Vh = module.linalg.svd(M, full_matrices=full)
        # invariant to each singular pair's phase (u -> u e^{i phi}, v -> v e^{i phi})
        return (S ** 2).sum() + (U[..., :k].abs() ** 2 * wu).sum() + (Vh[..., :k, :].abs() ** 2 * wv.reshape(k, -1)).sum()

    loss(torch, A, w_u, w_v).backward()
    loss(kiln, kA, _k(w_u), _k(w_v)).backward()
    _close(kA.grad, A.grad, rtol=1e-8, atol=1e-10)
    B = A.detach().clone().requires_grad_()
    kB = _k(B)
    torch.linalg.svdvals(B).sum().backward()
    kiln.linalg.svdvals(kB).sum().backward()
    _close(kB.grad, B.grad, rtol=1e-8, atol=1e-10)
