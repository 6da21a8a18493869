"""torch's randomized and iterative decompositions on kiln's linalg (torch.svd_lowrank,
pca_lowrank and lobpcg, which torch keeps in its top-level namespace): svd_lowrank and
pca_lowrank (randomized range finder + a small SVD, differentiable through matmul / qr /
svd), lobpcg (the block LOBPCG iteration for the k extreme eigenpairs of a symmetric pencil
A x = lambda B x, with torch's gradient for B = None).

Imports: kiln._C, kiln._creation, kiln._norms, kiln.autograd and the linalg modules below it.
"""

from __future__ import annotations

import math

from kiln import _C, _creation
from kiln._arguments import checked_signature
from kiln._norms import vector_norm
from kiln.autograd.function import Function
from kiln.autograd.grad_mode import no_grad
from kiln.linalg._decompositions import eigh, qr, svd
from kiln.linalg._solve import solve

_F = _C._functions


# --- randomized low-rank SVD and PCA ------------------------------------------------------------
def _adjoint(x):
    return x.transpose(-2, -1)


def _sketch(A, n, q):
    """The Gaussian [n, q] sketch of the range finder: one for every matrix of the batch, drawn by randn(n, q)
    as torch draws it (so a q randn refuses is refused with randn's words), then A's dtype checked."""
    sketch = _F.randn(n, q, dtype=A.dtype if A.dtype.is_floating_point else _C.float32)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_word(A.dtype)} != float")
    return sketch


def _range_basis(A, sketch, niter):
    """An orthonormal [*, m, q'] basis approximately spanning A's dominant column space: the sketched A G,
    refined by ``niter`` power (subspace) iterations, re-orthonormalized at each step."""
    basis = qr(A.matmul(sketch))[0]
    for _ in range(niter):
        basis = qr(_adjoint(A).matmul(basis))[0]
        basis = qr(A.matmul(basis))[0]
    return basis


@checked_signature("svd_lowrank(Tensor A, Any q, Any niter, Tensor? M)")
def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: (U, S, V) with A - M ~ U diag(S) V^T for a [*, m, n] A (M broadcast to A; None
    means 0), from a rank-q randomized range finder with ``niter`` subspace iterations. V, not V^T, as torch.
    Random: kiln's generator draws the sketch, so the factors differ from torch's, within the method's
    accuracy. Dense tensors only. q and niter are torch's Python values: q goes to randn (its refusals),
    niter to range()."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if A.dim() < 2:  # torch's unpacking of the last two sizes
        raise ValueError(f"not enough values to unpack (expected 2, got {A.dim()})")
    m, n = A.shape[-2], A.shape[-1]
    # torch draws the sketch before it subtracts M, so a q randn refuses is refused first
    sketch = _sketch(A, min(m, n), q)
    matrix = A if M is None else A - M
    if matrix.dtype != sketch.dtype and matrix.dtype.is_floating_point:
        sketch = sketch.to(matrix.dtype)
    if m < n:  # work on the tall side: the adjoint's factors, swapped
        V, S, U = _svd_tall(_adjoint(matrix), sketch, niter)
        return U, S, V
    return _svd_tall(matrix, sketch, niter)


def _svd_tall(A, sketch, niter: int):
    basis = _range_basis(A, sketch, niter)                       # [*, m, q]
    small = _adjoint(basis).matmul(A)                       # [*, q, n]
    u, s, vh = svd(small, full_matrices=False)
    return basis.matmul(u), s, _adjoint(vh)


def pca_lowrank(A, q=None, center: bool = True, niter: int = 2):
    """torch.pca_lowrank: svd_lowrank of A (centred over its rows when ``center``) with q = min(6, m, n) by
    default: (U, S, V), V's columns the principal directions."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter=niter, M=None)


def _dtype_word(dtype) -> str:
    return {_C.int64: "long int", _C.int32: "int", _C.int16: "short int", _C.int8: "signed char",
            _C.uint8: "unsigned char", _C.bool: "bool", _C.float32: "float", _C.float64: "double",
            _C.float16: "c10::Half", _C.bfloat16: "c10::BFloat16"}.get(dtype, str(dtype).removeprefix("kiln."))


# --- LOBPCG -------------------------------------------------------------------------------------
def _times(B, x):
    """B x, with B = None standing for the identity."""
    return x if B is None else B.matmul(x)


def _orthonormal_against(block, basis, drop: float, B=None):
    """``block``'s columns made B-orthogonal to ``basis`` (B-orthonormal columns, or None) and B-orthonormal
    among themselves (twice, for stability), dropping directions whose Gram eigenvalue is below
    ``drop`` times the largest: the Rayleigh-Ritz basis must stay well conditioned. B = None: the
    ordinary inner product."""
    for _ in range(2):
        if basis is not None:
            block = block - basis.matmul(basis.t().matmul(_times(B, block)))
        gram = block.t().matmul(_times(B, block))
        values, vectors = eigh(gram)
        top = float(values.max()) if values.numel() else 0.0
        keep = [i for i, v in enumerate(values.tolist()) if v > drop * max(top, 1e-300)]
        if not keep:
            return None
        index = _creation.tensor(keep, dtype=_C.int64)
        block = block.matmul(vectors.index_select(1, index)) / values.index_select(0, index).sqrt()
    return block


def _ritz(A, basis, n: int, largest: bool):
    """The n extreme Ritz pairs of A on the (B-orthonormal) ``basis``: (values, coefficients), most
    extreme first."""
    values, vectors = eigh(basis.t().matmul(A.matmul(basis)))
    order = list(range(values.shape[0] - 1, values.shape[0] - 1 - n, -1)) if largest else list(range(n))
    index = _creation.tensor(order, dtype=_C.int64)
    return values.index_select(0, index), vectors.index_select(1, index)


def _lobpcg_single(A, B, X, k: int, n: int, niter: int, tol: float, largest: bool):
    """LOBPCG on one [m, m] pencil (A, B) (B None: the identity) from the [m, n] start X; the first k
    pairs decide convergence: |A x - lambda B x| <= tol |lambda| |B x| (|B x| = 1 when B is None)."""
    eps = 2.220446049250313e-16 if A.dtype == _C.float64 else 1.1920928955078125e-07
    X = _orthonormal_against(X, None, eps, B)
    if X is None or X.shape[1] < n:
        raise ValueError("kiln.lobpcg: the initial X must have n linearly independent columns")
    values, coefficients = _ritz(A, X, n, largest)
    X = X.matmul(coefficients)
    P = None
    iteration = 0
    while niter < 0 or iteration < niter:
        BX = _times(B, X)
        R = A.matmul(X) - BX * values
        residual = vector_norm(R, 2, [0]).tolist()
        scale = [max(abs(v), eps) for v in values.tolist()]
        if B is not None:
            scale = [s * b for s, b in zip(scale, vector_norm(BX, 2, [0]).tolist())]
        if all(r <= tol * s for r, s in zip(residual[:k], scale[:k])):
            break
        W = _orthonormal_against(R, X, eps, B)
        blocks = [X] + ([W] if W is not None else [])
        if P is not None:
            P = _orthonormal_against(P, _F.cat(blocks, 1), eps, B)
            if P is not None:
                blocks.append(P)
        basis = _F.cat(blocks, 1)
        values, coefficients = _ritz(A, basis, n, largest)
        X_new = basis.matmul(coefficients)
        P = basis.narrow(1, n, basis.shape[1] - n).matmul(coefficients.narrow(0, n, basis.shape[1] - n)) \
            if basis.shape[1] > n else None
        X = X_new
        iteration += 1
    return values, X


def _lobpcg_values(A, B, X, k: int, n: int, niter: int, tol: float, largest: bool):
    """(E, V) of every matrix of the batch, without autograd: [*, k] and [*, m, k]."""
    m = A.shape[-1]
    batch = tuple(A.shape[:-2])
    with no_grad():
        flat = A.detach().reshape(-1, m, m)
        flat_B = B.detach().reshape(-1, m, m) if B is not None else None
        starts = X.detach().reshape(-1, m, n) if X is not None else _F.randn(flat.shape[0], m, n, dtype=A.dtype)
        values, vectors = [], []
        for i in range(flat.shape[0]):
            start = starts[i if starts.shape[0] > 1 else 0]
            e, v = _lobpcg_single(flat[i], flat_B[i] if flat_B is not None else None, start.to(A.dtype), min(k, n),
                                  n, niter, tol, largest)
            values.append(e.narrow(0, 0, min(k, n)))
            vectors.append(v.narrow(1, 0, min(k, n)))
        E = _F.stack(values, 0).reshape(*batch, -1)
        V = _F.stack(vectors, 0).reshape(*batch, m, -1)
    return E, V


def _partial_eigh_backward(E_grad, V_grad, A, E, V):
    """d loss / d A for k eigenpairs (E, V) of a symmetric A, V's columns orthonormal ([*, m, k]).

    Inside span(V) it is eigh's formula, V (diag(E_grad) + (V^T V_grad) * F) V^T with F_ij = 1/(e_j - e_i)
    off the diagonal; the rest comes from each eigenvector moving out of span(V): -y_j v_j^T, y_j solving
    (P (A - e_j) P + V V^T) y_j = P g_j with P = I - V V^T, g_j V_grad's column (the shifted system is
    invertible while e_j is not an eigenvalue of A off span(V)). torch solves the same Sylvester equation
    with a characteristic-polynomial series; the two agree to the accuracy of the eigenpairs. Built from
    differentiable ops."""
    m, k = V.shape[-2], V.shape[-1]
    Vt = V.mT
    same = _F.eye(k, dtype=_C.bool)
    gaps = E.unsqueeze(-2) - E.unsqueeze(-1)
    F = _F.where(same, _F.zeros_like(gaps), 1.0 / _F.where(same, _F.ones_like(gaps), gaps))
    inside = V.matmul((_F.diag_embed(E_grad) + Vt.matmul(V_grad) * F).matmul(Vt))
    span = V.matmul(Vt)
    P = _F.eye(m, dtype=A.dtype) - span
    PAP = P.matmul(A).matmul(P)
    systems = PAP.unsqueeze(-3) - E.unsqueeze(-1).unsqueeze(-1) * P.unsqueeze(-3) + span.unsqueeze(-3)
    rhs = P.matmul(V_grad).mT.unsqueeze(-1)                            # [*, k, m, 1]
    Y = solve(systems, rhs).squeeze(-1).mT                 # [*, m, k]
    return inside - Y.matmul(Vt)


class LOBPCG(Function):
    """The autograd Function of lobpcg."""

    @staticmethod
    def forward(ctx, A, B, X, k, n, niter, tol, largest):
        E, V = _lobpcg_values(A, B, X, k, n, niter, tol, largest)
        ctx.has_B = B is not None
        ctx.save_for_backward(A, E, V)
        return E, V

    @staticmethod
    def backward(ctx, E_grad, V_grad):
        if ctx.has_B:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        A, E, V = ctx.saved_tensors
        return _partial_eigh_backward(E_grad, V_grad, A, E, V), None, None, None, None, None, None, None


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """torch.lobpcg: (E, X), the k largest (or smallest) eigenvalues of the symmetric [*, m, m] pencil
    A x = lambda B x (B symmetric positive definite, same shape as A; None: the identity) and their
    B-orthonormal eigenvectors, by block LOBPCG with Rayleigh-Ritz on [X, residuals, previous directions]
    (kiln runs the same robust orthonormalizing iteration for method 'ortho' and 'basic'). Defaults as
    torch: k = 1 (or X's columns), n = k, niter = 1000 (-1: until converged), tol = sqrt(dtype eps),
    largest = True.

    Gradient as torch's: when A or B requires grad, both are symmetrized ((A + A^T) / 2) first, so A.grad
    is symmetric; d/dA is the partial-eigenspace formula of _partial_eigh_backward, and with a B the
    backward raises torch's ValueError (torch has no B != I backward). X gets no gradient.
    Kiln limits: iK (preconditioner) and tracker are not supported (NotImplementedError); dense real
    tensors only."""
    if iK is not None or tracker is not None:
        raise NotImplementedError("kiln.lobpcg: iK and tracker are not supported yet")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise AssertionError(f"A must be square, got shape {_C.Size(A.shape)}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {_C.Size(A.shape)} vs {_C.Size(B.shape)}")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_word(A.dtype)} != float")
    if B is not None and B.dtype != A.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_word(B.dtype)} != "
                           f"{_dtype_word(A.dtype)}")
    m = A.shape[-1]
    if X is not None:
        n = X.shape[-1]
        k = n if k is None else k
    else:
        k = 1 if k is None else k
        n = k if n is None else n
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    tol = math.sqrt(2.220446049250313e-16 if A.dtype == _C.float64 else 1.1920928955078125e-07) if tol is None \
        else tol
    largest = True if largest is None else largest
    if _C.is_grad_enabled() and (A.requires_grad or (B is not None and B.requires_grad)):
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return LOBPCG.apply(A_sym, B_sym, X, k, n, niter, tol, largest)
    return _lobpcg_values(A, B, X, k, n, niter, tol, largest)
