"""kiln.cholesky_solve's gradient and kiln.lobpcg's generalized problem and gradient, against torch.

cholesky_solve: values, d/dB and d/dL (torch's formula, nonzero in the triangle the solve never reads),
upper and lower factors, batched and broadcast batches, float32/float64, double backward, and torch's
argument errors. lobpcg: A x = lambda B x against torch.lobpcg and a dense generalized eigensolve
(eigenvalues; eigenvectors through their residual, B-orthonormality and up to sign), d/dA for B = None
(partial eigenspace) against torch, double backward, and torch's errors (backward with a B raises).
"""

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error, float64_values as as_np

KDT = {"float32": kiln.float32, "float64": kiln.float64}
TDT = {"float32": torch.float32, "float64": torch.float64}


def pair(array, dtype="float64", requires_grad=False):
    return (kiln.tensor(array, dtype=KDT[dtype], requires_grad=requires_grad),
            torch.tensor(array, dtype=TDT[dtype], requires_grad=requires_grad))


# --- cholesky_solve -----------------------------------------------------------------------------
def factor(shape, upper, seed, junk=0.0):
    """A [*shape, n, n] Cholesky factor of a well-conditioned SPD matrix, plus ``junk`` times noise in every
    entry (the unread triangle then holds values, as a user's full matrix might)."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    a = rng.standard_normal(shape)
    L = np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + n * np.eye(n))
    if upper:
        L = np.swapaxes(L, -1, -2)
    return L + junk * rng.standard_normal(shape)


SHAPES = [((4, 4), (4, 3)), ((2, 4, 4), (2, 4, 3)), ((4, 4), (3, 1, 4, 2)), ((2, 1, 4, 4), (3, 4, 2)),
          ((3, 3), (3, 1))]


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-10), ("float32", 1e-4)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("l_shape, b_shape", SHAPES)
@pytest.mark.parametrize("junk", [0.0, 0.1])
def test_cholesky_solve_value_and_gradient(l_shape, b_shape, upper, dtype, tol, junk):
    rng = np.random.default_rng(1)
    kL, tL = pair(factor(l_shape, upper, 0, junk), dtype, requires_grad=True)
    kB, tB = pair(rng.standard_normal(b_shape), dtype, requires_grad=True)
    kx, tx = kiln.cholesky_solve(kB, kL, upper), torch.cholesky_solve(tB, tL, upper)
    assert tuple(kx.shape) == tuple(tx.shape) and kx.dtype == KDT[dtype]
    np.testing.assert_allclose(as_np(kx), as_np(tx), rtol=tol, atol=tol)
    kg, tg = pair(rng.standard_normal(tuple(tx.shape)), dtype)
    k_grads = kiln.autograd.grad(kx, (kB, kL), kg)
    t_grads = torch.autograd.grad(tx, (tB, tL), tg)
    for k, t in zip(k_grads, t_grads):
        assert tuple(k.shape) == tuple(t.shape)
        np.testing.assert_allclose(as_np(k), as_np(t), rtol=tol * 10, atol=tol * 10)
    # torch's d/dL reaches the triangle the solve never reads; kiln's must too.
    unread = np.triu(np.ones(l_shape[-2:]), 1) if not upper else np.tril(np.ones(l_shape[-2:]), -1)
    assert np.abs(as_np(k_grads[1]) * unread).max() > 1e-3


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("which", ["B", "L"])
def test_cholesky_solve_gradient_of_one_input(upper, which):
    kL, tL = pair(factor((3, 5, 5), upper, 2), requires_grad=which == "L")
    kB, tB = pair(np.random.default_rng(3).standard_normal((3, 5, 2)), requires_grad=which == "B")
    kx, tx = kiln.cholesky_solve(kB, kL, upper), torch.cholesky_solve(tB, tL, upper)
    (kx * kx).sum().backward()
    (tx * tx).sum().backward()
    k_leaf, t_leaf, other = (kL, tL, kB) if which == "L" else (kB, tB, kL)
    np.testing.assert_allclose(as_np(k_leaf.grad), as_np(t_leaf.grad), rtol=1e-10, atol=1e-12)
    assert other.grad is None


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("l_shape, b_shape", [((4, 4), (4, 3)), ((4, 4), (2, 4, 2)), ((2, 1, 4, 4), (3, 4, 2))])
def test_cholesky_solve_double_backward(l_shape, b_shape, upper):
    rng = np.random.default_rng(4)
    kL, tL = pair(factor(l_shape, upper, 5, junk=0.1), requires_grad=True)
    kB, tB = pair(rng.standard_normal(b_shape), requires_grad=True)
    kx, tx = kiln.cholesky_solve(kB, kL, upper), torch.cholesky_solve(tB, tL, upper)
    kg, tg = pair(rng.standard_normal(tuple(tx.shape)))
    k_first = kiln.autograd.grad(kx, (kB, kL), kg, create_graph=True)
    t_first = torch.autograd.grad(tx, (tB, tL), tg, create_graph=True)
    kw, tw = pair(rng.standard_normal(l_shape))
    k_second = kiln.autograd.grad((k_first[0] ** 2).sum() + (k_first[1] * kw).sum(), (kB, kL))
    t_second = torch.autograd.grad((t_first[0] ** 2).sum() + (t_first[1] * tw).sum(), (tB, tL))
    for k, t in zip(k_second, t_second):
        np.testing.assert_allclose(as_np(k), as_np(t), rtol=1e-9, atol=1e-11)


def test_cholesky_solve_through_cholesky_and_inverse():
    """The usual chain A -> cholesky -> cholesky_solve, and cholesky_inverse (a cholesky_solve of I)."""
    a = np.random.default_rng(6).standard_normal((2, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    for upper in (False, True):
        kA, tA = pair(spd, requires_grad=True)
        kB, tB = pair(np.ones((2, 4, 1)))
        kx = kiln.cholesky_solve(kB, kiln.linalg.cholesky(kA, upper=upper), upper)
        tx = torch.cholesky_solve(tB, torch.linalg.cholesky(tA, upper=upper), upper)
        (kx ** 3).sum().backward()
        (tx ** 3).sum().backward()
        np.testing.assert_allclose(as_np(kA.grad), as_np(tA.grad), rtol=1e-10, atol=1e-12)
        kL, tL = pair(factor((2, 4, 4), upper, 7, junk=0.1), requires_grad=True)
        kw, tw = pair(np.random.default_rng(8).standard_normal((2, 4, 4)))
        (kiln.cholesky_inverse(kL, upper) * kw).sum().backward()
        (torch.cholesky_inverse(tL, upper) * tw).sum().backward()
        np.testing.assert_allclose(as_np(kL.grad), as_np(tL.grad), rtol=1e-10, atol=1e-12)


def test_cholesky_solve_out():
    kL, tL = pair(factor((4, 4), False, 9))
    kB, tB = pair(np.ones((4, 2)))
    out = kiln.empty(4, 2, dtype=kiln.float64)
    result = kiln.cholesky_solve(kB, kL, out=out)
    assert result is out
    np.testing.assert_allclose(as_np(out), as_np(torch.cholesky_solve(tB, tL)), rtol=1e-12)


CHOLESKY_SOLVE_ERRORS = [
    lambda L: L.cholesky_solve(L.ones(3), L.eye(3)),
    lambda L: L.cholesky_solve(L.ones(3, 2), L.ones(3)),
    lambda L: L.cholesky_solve(L.ones(3, 2), L.ones(3, 4, dtype=L.float64)),      # dtype before squareness
    lambda L: L.cholesky_solve(L.ones(3, 2, dtype=L.int64), L.eye(3)),
    lambda L: L.cholesky_solve(L.ones(5, 2), L.ones(3, 4)),
    lambda L: L.cholesky_solve(L.ones(2, 3, 2), L.ones(2, 3, 4)),
    lambda L: L.cholesky_solve(L.ones(2, 4, 2), L.ones(3, 3, 3)),                 # sizes before broadcast
    lambda L: L.cholesky_solve(L.ones(2, 5, 3, 2), L.ones(4, 3, 3)),
    lambda L: L.cholesky_solve(L.ones(3, 2, dtype=L.int64), L.ones(3, 3, dtype=L.int64)),
    lambda L: L.cholesky_solve(L.ones(3, 2, dtype=L.float16), L.eye(3, dtype=L.float16)),
]


@pytest.mark.parametrize("case", range(len(CHOLESKY_SOLVE_ERRORS)))
def test_cholesky_solve_errors(case):
    make = CHOLESKY_SOLVE_ERRORS[case]
    assert_same_error(lambda: make(kiln), lambda: make(torch))


# --- lobpcg: the generalized problem ------------------------------------------------------------
def pencil(m, seed=0, batch=()):
    """(A, B): A symmetric with eigenvalues 1..m, B symmetric positive definite and not diagonal."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((*batch, m, m)))[0]
    a = (q * np.arange(1, m + 1.0)) @ np.swapaxes(q, -1, -2)
    c = rng.standard_normal((*batch, m, m))
    b = c @ np.swapaxes(c, -1, -2) / m + np.eye(m)
    return (a + np.swapaxes(a, -1, -2)) / 2, (b + np.swapaxes(b, -1, -2)) / 2


def dense_generalized(a, b):
    """Eigenvalues (ascending) and B-orthonormal eigenvectors of A x = lambda B x, by Cholesky reduction."""
    L = np.linalg.cholesky(b)
    Li = np.linalg.inv(L)
    w, y = np.linalg.eigh(Li @ a @ np.swapaxes(Li, -1, -2))
    return w, np.swapaxes(Li, -1, -2) @ y


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-7), ("float32", 2e-3)])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_lobpcg_generalized(k, largest, dtype, tol):
    a, b = pencil(24)
    (ka, ta), (kb, tb) = pair(a, dtype), pair(b, dtype)
    E, X = kiln.lobpcg(ka, k=k, B=kb, largest=largest)
    tE, tX = torch.lobpcg(ta, k=k, B=tb, largest=largest)
    assert tuple(E.shape) == tuple(tE.shape) == (k,) and tuple(X.shape) == tuple(tX.shape) == (24, k)
    assert E.dtype == KDT[dtype] and X.dtype == KDT[dtype]
    w, v = dense_generalized(a, b)
    order = np.arange(23, 23 - k, -1) if largest else np.arange(k)
    np.testing.assert_allclose(as_np(E), w[order], rtol=tol, atol=tol)
    np.testing.assert_allclose(as_np(E), as_np(tE), rtol=tol, atol=tol)
    x = as_np(X)
    np.testing.assert_allclose(a @ x, b @ x * as_np(E), atol=tol * 50)          # A x = lambda B x
    np.testing.assert_allclose(x.T @ b @ x, np.eye(k), atol=tol * 10)           # B-orthonormal
    # the same eigenvectors as the dense solve and torch's, up to sign
    for reference in (v[:, order], as_np(tX)):
        np.testing.assert_allclose(np.abs(np.sum(x * (b @ reference), 0)), np.ones(k), atol=tol * 50)


def test_lobpcg_generalized_batch_and_start():
    a, b = pencil(30, seed=3, batch=(2,))
    (ka, ta), (kb, tb) = pair(a), pair(b)
    x0 = np.random.default_rng(1).standard_normal((2, 30, 4))
    E, X = kiln.lobpcg(ka, B=kb, X=kiln.tensor(x0), tol=1e-10, largest=False)
    tE, _ = torch.lobpcg(ta, B=tb, X=torch.tensor(x0), tol=1e-10, largest=False)
    assert tuple(E.shape) == (2, 4) and tuple(X.shape) == (2, 30, 4)
    np.testing.assert_allclose(as_np(E), as_np(tE), rtol=1e-8)
    for i in range(2):
        np.testing.assert_allclose(as_np(E)[i], dense_generalized(a[i], b[i])[0][:4], rtol=1e-8)
    # B = 2 I halves every eigenvalue of the standard problem
    E, _ = kiln.lobpcg(ka[0], k=2, B=2 * kiln.eye(30, dtype=kiln.float64), niter=-1)
    np.testing.assert_allclose(as_np(E), [15.0, 14.5], rtol=1e-7)


def test_lobpcg_generalized_with_grad_runs_forward():
    """With a B, torch's forward still runs when A or B requires grad (its backward is what raises)."""
    a, b = pencil(20, seed=4)
    for which in ("A", "B", "AB"):
        ka, ta = pair(a, requires_grad="A" in which)
        kb, tb = pair(b, requires_grad="B" in which)
        E, X = kiln.lobpcg(ka, k=2, B=kb)
        tE, _ = torch.lobpcg(ta, k=2, B=tb)
        assert E.requires_grad and X.requires_grad and tE.requires_grad
        np.testing.assert_allclose(as_np(E), as_np(tE), rtol=1e-7)
        assert_same_error(lambda: E.sum().backward(), lambda: tE.sum().backward())


# --- lobpcg: the gradient (B = None) ------------------------------------------------------------
def symmetric(m, seed=0, batch=(), scale=1.0):
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((*batch, m, m)))[0]
    a = (q * (scale * np.arange(1, m + 1.0))) @ np.swapaxes(q, -1, -2)
    return (a + np.swapaxes(a, -1, -2)) / 2


def loss(lib, E, X, w):
    """Depends on the eigenvalues and, sign-free, on the eigenvectors (through X X^T)."""
    weights = lib.arange(1, E.shape[-1] + 1, dtype=E.dtype)
    return (E * weights).sum() + ((X @ X.mT) * w).sum()


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_lobpcg_gradient_float64(k, largest):
    a = symmetric(24)
    ka, ta = pair(a, requires_grad=True)
    kw, tw = pair(np.random.default_rng(5).standard_normal((24, 24)))
    E, X = kiln.lobpcg(ka, k=k, largest=largest, tol=1e-12)
    tE, tX = torch.lobpcg(ta, k=k, largest=largest, tol=1e-12)
    loss(kiln, E, X, kw).backward()
    loss(torch, tE, tX, tw).backward()
    grad = as_np(ka.grad)
    np.testing.assert_allclose(grad, as_np(ta.grad), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(grad, grad.T, atol=1e-12)                     # symmetrized, as torch's


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_gradient_float32_batched(largest):
    """float32 eigenpairs are accurate to about sqrt(eps), and so are both gradients: each is compared with
    the float64 eigh gradient of the same pairs."""
    a = symmetric(18, seed=1, batch=(2,))
    ka, ta = pair(a, "float32", requires_grad=True)
    w = np.random.default_rng(6).standard_normal((18, 18))
    kw, tw = pair(w, "float32")
    E, X = kiln.lobpcg(ka, k=2, largest=largest)
    tE, tX = torch.lobpcg(ta, k=2, largest=largest)
    assert tuple(E.shape) == (2, 2) and tuple(X.shape) == (2, 18, 2)
    loss(kiln, E, X, kw).backward()
    loss(torch, tE, tX, tw).backward()
    assert ka.grad.dtype == kiln.float32 and tuple(ka.grad.shape) == (2, 18, 18)
    reference = torch.tensor(a, requires_grad=True)
    values, vectors = torch.linalg.eigh(reference)
    pick = torch.tensor([17, 16] if largest else [0, 1])
    loss(torch, values[..., pick], vectors[..., pick], torch.tensor(w)).backward()
    np.testing.assert_allclose(as_np(ka.grad), as_np(reference.grad), atol=3e-3)
    np.testing.assert_allclose(as_np(ka.grad), as_np(ta.grad), atol=6e-3)


@pytest.mark.parametrize("part", ["values", "vectors"])
def test_lobpcg_gradient_of_one_output(part):
    a = symmetric(20, seed=2, batch=(2,))
    ka, ta = pair(a, requires_grad=True)
    E, X = kiln.lobpcg(ka, k=2, tol=1e-12)
    tE, tX = torch.lobpcg(ta, k=2, tol=1e-12)
    if part == "values":
        (E ** 2).sum().backward()
        (tE ** 2).sum().backward()
    else:
        ((X @ X.mT) ** 2 * ka.detach()).sum().backward()
        ((tX @ tX.mT) ** 2 * ta.detach()).sum().backward()
    np.testing.assert_allclose(as_np(ka.grad), as_np(ta.grad), rtol=1e-8, atol=1e-9)


def test_lobpcg_gradient_of_a_nonsymmetric_input():
    """A requiring grad is symmetrized first, as torch does: the values are those of (A + A^T) / 2."""
    rng = np.random.default_rng(7)
    a = symmetric(21, seed=3) + 0.3 * rng.standard_normal((21, 21))
    ka, ta = pair(a, requires_grad=True)
    kw, tw = pair(rng.standard_normal((21, 21)))
    E, X = kiln.lobpcg(ka, k=2, tol=1e-12)
    tE, tX = torch.lobpcg(ta, k=2, tol=1e-12)
    np.testing.assert_allclose(as_np(E), as_np(tE), rtol=1e-10)
    np.testing.assert_allclose(as_np(E), np.linalg.eigvalsh((a + a.T) / 2)[::-1][:2], rtol=1e-10)
    loss(kiln, E, X, kw).backward()
    loss(torch, tE, tX, tw).backward()
    np.testing.assert_allclose(as_np(ka.grad), as_np(ta.grad), rtol=1e-8, atol=1e-9)


def test_lobpcg_double_backward():
    a = symmetric(18, seed=4)
    ka, ta = pair(a, requires_grad=True)
    kw, tw = pair(np.random.default_rng(8).standard_normal((18, 18)))
    E, X = kiln.lobpcg(ka, k=2, tol=1e-12)
    tE, tX = torch.lobpcg(ta, k=2, tol=1e-12)
    (kg,) = kiln.autograd.grad(loss(kiln, E, X, kw), ka, create_graph=True)
    (tg,) = torch.autograd.grad(loss(torch, tE, tX, tw), ta, create_graph=True)
    (kgg,) = kiln.autograd.grad((kg * kw).sum(), ka)
    (tgg,) = torch.autograd.grad((tg * tw).sum(), ta)
    np.testing.assert_allclose(as_np(kgg), as_np(tgg), rtol=1e-7, atol=1e-8)
    assert np.abs(as_np(tgg)).max() > 1e-2


def test_lobpcg_no_grad_paths():
    ka, _ = pair(symmetric(20, seed=5), requires_grad=True)
    with kiln.no_grad():
        E, X = kiln.lobpcg(ka, k=2)
    assert not E.requires_grad and not X.requires_grad
    E, X = kiln.lobpcg(ka.detach(), k=2)
    assert not E.requires_grad


def test_lobpcg_errors():
    a, b = pencil(20, seed=6)
    (ka, ta), (kb, tb) = pair(a), pair(b)
    assert_same_error(lambda: kiln.lobpcg(ka, k=2, B=kb[:19, :19]), lambda: torch.lobpcg(ta, k=2, B=tb[:19, :19]))
    assert_same_error(lambda: kiln.lobpcg(ka, k=2, B=kiln.stack([kb, kb])),
                      lambda: torch.lobpcg(ta, k=2, B=torch.stack([tb, tb])))
    assert_same_error(lambda: kiln.lobpcg(ka, k=2, B=kb.float()), lambda: torch.lobpcg(ta, k=2, B=tb.float()))
    assert_same_error(lambda: kiln.lobpcg(ka.float(), k=2, B=kb), lambda: torch.lobpcg(ta.float(), k=2, B=tb))
    assert_same_error(lambda: kiln.lobpcg(ka, k=7, B=kb), lambda: torch.lobpcg(ta, k=7, B=tb))
    with pytest.raises(NotImplementedError, match="kiln.lobpcg: iK and tracker"):
        kiln.lobpcg(ka, k=2, iK=kb)
