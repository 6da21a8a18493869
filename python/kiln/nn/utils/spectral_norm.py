"""torch.nn.utils.spectral_norm / remove_spectral_norm: the hook-based spectral
normalisation (Miyato et al., 2018), w = w_orig / sigma(w_orig), sigma by power
iteration on the weight reshaped to a matrix (``dim`` first; dim=1 for the
transposed convolutions).

``spectral_norm(module)`` replaces the parameter ``weight`` with ``weight_orig``
and the buffers ``weight_u`` / ``weight_v`` (random unit vectors: kiln's RNG,
so not torch's values for the same seed), and recomputes ``module.weight`` in a
forward pre-hook, doing ``n_power_iterations`` steps (in place on the buffers)
in training mode only, as torch. Knowing difference: torch's state_dict
version-metadata hooks (for checkpoints from before torch 1.1) are not kept."""

from __future__ import annotations

from kiln import _C
from kiln.nn.parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


from kiln.autograd.grad_mode import no_grad as _NoGrad  # noqa: E402
from kiln.nn import functional as F
from kiln.nn.modules.conv import ConvTranspose1d, ConvTranspose2d
from kiln.nn.modules.conv_transpose3d import ConvTranspose3d


def _normalize(x, eps: float):
    return F.normalize(x, dim=0, eps=eps)


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig``, ``_u`` and ``_v``."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        return weight_mat.reshape(weight_mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with _NoGrad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(weight_mat.t().mv(u), self.eps))
                    u.copy_(_normalize(weight_mat.mv(v), self.eps))
                u = u.clone()
                v = v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module) -> None:
        with _NoGrad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with _NoGrad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = _normalize(_C._functions.empty((h,), dtype=weight.dtype).normal_(0, 1), fn.eps)
            v = _normalize(_C._functions.empty((w,), dtype=weight.dtype).normal_(0, 1), fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Applies spectral normalisation to ``module.<name>``; returns the module."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undoes spectral_norm: ``module.<name>`` is a Parameter again (the normalised values)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
