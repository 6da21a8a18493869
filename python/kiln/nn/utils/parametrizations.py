"""kiln.nn.utils.parametrizations: torch's orthogonal, weight_norm and
spectral_norm as parametrizations (kiln.nn.utils.parametrize), with torch's
state_dict layout:

- weight_norm: ``parametrizations.weight.original0`` (g) and ``original1`` (v).
- spectral_norm: ``parametrizations.weight.original`` plus the power-iteration
  vectors ``parametrizations.weight.0._u`` / ``._v`` (random at registration,
  from kiln's RNG: copy torch's to compare values).
- orthogonal: ``parametrizations.weight.original`` (and ``.0.base`` under the
  dynamic trivialization); maps "matrix_exp", "cayley", "householder".

Knowing differences: torch's weight_norm also converts pre-parametrization
checkpoints (``weight_g`` / ``weight_v`` keys) with a load_state_dict pre-hook;
kiln's Module has no such hooks, so those keys must be renamed by hand. kiln has
no complex dtypes, so the complex branches of orthogonal are absent."""

from __future__ import annotations

from enum import Enum, auto

import kiln
from kiln import _C
from kiln.nn import functional
from kiln.nn.modules.conv import ConvTranspose1d, ConvTranspose2d
from kiln.nn.modules.conv_transpose3d import ConvTranspose3d
from kiln.nn.modules.module import Module
from kiln.nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _k():
    return kiln


def _F():
    return functional


from kiln.autograd.grad_mode import no_grad as _NoGrad  # noqa: E402


# --- orthogonal ------------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _eye_like_last(x, n: int):
    return _k().eye(n, dtype=x.dtype)


def _is_orthogonal(q) -> bool:
    n, k = q.size(-2), q.size(-1)
    eps = 10.0 * n * _k().finfo(q.dtype).eps
    return bool(_k().allclose(q.mT @ q, _eye_like_last(q, k), atol=eps))


def _make_orthogonal(a):
    """The Q of a's QR decomposition, its columns' signs fixed so that diag(R) > 0."""
    x, tau = _k().geqrf(a)
    q = _k().linalg.householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                pad = _C._functions.zeros((*X.shape[:-1], n - k), dtype=X.dtype)
                X = _C._functions.cat([X, pad], -1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _k().linalg.matrix_exp(A)
            else:
                eye = _eye_like_last(A, n)
                Q = _k().linalg.solve(eye - A * 0.5, eye + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _k().linalg.householder_product(A, tau)
            # X's diagonal holds +-1: the signs of Q's columns (not differentiated)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().to(_C.int32).to(Q.dtype).unsqueeze(-2)
        base = self._buffers.get("base")
        if base is not None:
            Q = base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with _NoGrad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = _k().geqrf(Q)
                # diag(R) > 0 (else Q = (-Q)(-Id) is another QR): the diagonal becomes R's signs, flipped where
                # LAPACK skipped a reflection (tau == 0)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.copy_(_k().where(tau == 0.0, diag.sign() * -1, diag.sign()))
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _k().randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(_C._functions.cat([Q, N], -1))
            self.base = Q
            neg_id = _C._functions.zeros(tuple(Q_init.shape), dtype=Q_init.dtype)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Makes ``module.<name>`` (a matrix or a batch of them) orthogonal; returns the module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# --- weight_norm -----------------------------------------------------------------------------------
class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _k().norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return _k().norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0):
    """``module.<name>`` as g * v / ||v|| (norm over every dim but ``dim``; None: over all)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# --- spectral_norm ---------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with _NoGrad():
                u = _C._functions.empty((h,), dtype=weight.dtype).normal_(0, 1)
                v = _C._functions.empty((w,), dtype=weight.dtype).normal_(0, 1)
                self.register_buffer("_u", _F().normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", _F().normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations: int) -> None:
        with _NoGrad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(_F().normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(_F().normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _F().normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """``module.<name>`` divided by its spectral norm (power iteration; dim=1 for transposed convs)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
