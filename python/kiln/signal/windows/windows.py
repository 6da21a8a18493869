"""The window functions of torch.signal.windows.

Each takes the window length ``M`` and keywords ``sym`` (a symmetric window, for filter design;
False gives the periodic window spectral analysis uses), ``dtype`` (float32 or float64; the
default dtype when None), ``layout`` (strided only), ``device`` and ``requires_grad``. As torch,
each lays its M points out with ``linspace`` in the requested dtype and applies its formula there,
so float32 windows round as torch's do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import kiln

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not kiln.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (kiln.float32, kiln.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _trivial(M: int, dtype, device, requires_grad):
    """The window of length 0 (empty) or 1 (a single 1), else None."""
    if M == 0:
        return kiln.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return kiln.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _points(start: float, end: float, M: int, dtype, device, requires_grad):
    return kiln.linspace(start, end, steps=M, dtype=dtype, device=device, requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=kiln.strided, device=None, requires_grad: bool = False):
    """The exponential (Poisson) window: exp(-|n - center| / tau)."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return kiln.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _points(-center * constant, (-center + (M - 1)) * constant, M, dtype, device, requires_grad)
    return kiln.exp(-kiln.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The cosine (sine) window: sin(pi * (n + 1/2) / M)."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return kiln.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _points(start * constant, (start + (M - 1)) * constant, M, dtype, device, requires_grad)
    return kiln.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=kiln.strided, device=None,
             requires_grad: bool = False):
    """The Gaussian window: exp(-(n - (M-1)/2)^2 / (2 std^2))."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return kiln.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _points(start * constant, (start + (M - 1)) * constant, M, dtype, device, requires_grad)
    return kiln.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=kiln.strided, device=None,
           requires_grad: bool = False):
    """The Kaiser window: I0(beta * sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    # beta, the first point and the step in the window's dtype, as torch computes them
    beta_t = kiln.tensor(beta, dtype=dtype, device=device)
    start = -beta_t
    constant = 2.0 * beta_t / (M if not sym else M - 1)
    end = kiln.minimum(beta_t, start + (M - 1) * constant)
    k = _points(start.item(), end.item(), M, dtype, device, requires_grad)
    return kiln.i0(kiln.sqrt(beta_t * beta_t - kiln.pow(k, 2))) / kiln.i0(beta_t)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=kiln.strided, device=None,
                   requires_grad: bool = False):
    """A sum of cosines: sum_i (-1)^i a[i] cos(2 pi i n / (M-1))."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0.0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = kiln.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                      requires_grad=requires_grad)
    i = kiln.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * kiln.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=kiln.strided, device=None,
                    requires_grad: bool = False):
    """The generalized Hamming window: alpha - (1 - alpha) cos(2 pi n / (M-1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The Hamming window (general_hamming with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The Hann window (general_hamming with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The Blackman window (general_cosine with 0.42, 0.5, 0.08)."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The Bartlett (triangular) window: 1 - |2n/(M-1) - 1|."""
    dtype = dtype or kiln.get_default_dtype()
    _checks("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _points(float(start), start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - kiln.abs(k)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=kiln.strided, device=None, requires_grad: bool = False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
