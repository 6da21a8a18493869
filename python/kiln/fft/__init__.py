"""kiln.fft: torch.fft's discrete Fourier transforms, on FFTW through three ops
(_fft_c2c, _fft_r2c, _fft_c2r; eager/ops/fft.yaml, Note [FFTs on FFTW]).

Each function resizes the signal dims first as torch does (``n`` / ``s`` trim with a
narrow or zero-pad at the end), promotes integer and bool inputs to the default float
dtype (float16/bfloat16 compute in float32: kiln has no complex32), maps ``norm``
("backward", "ortho", "forward") to the ops' normalization codes, and is differentiable
through the ops' formulas. hfft/ihfft are irfft/rfft of the conjugate with the opposite
normalization, as numpy defines them.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from kiln import _C
from kiln._arguments import _require_tensor, _write_out
from kiln._arguments import checked_signature as _checked_signature
from kiln._comparison import scalar_type_name as _scalar_type_name

_F = _C._functions

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORM_NONE, _NORM_ROOT_N, _NORM_N = 0, 1, 2


def _norm_code(norm: Optional[str], forward: bool) -> int:
    if norm is None or norm == "backward":
        return _NORM_NONE if forward else _NORM_N
    if norm == "forward":
        return _NORM_N if forward else _NORM_NONE
    if norm == "ortho":
        return _NORM_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _require_fft_tensor(value, name: str) -> None:
    """torch's TypeError for a non-tensor, naming the function as torch's parser does (fft_<name>)."""
    _require_tensor(value, "fft_" + name)


def _swap_norm(norm: Optional[str]) -> str:
    return {"backward": "forward", None: "forward", "forward": "backward", "ortho": "ortho"}[norm]


def _floating(x):
    """x in a dtype the transforms take: float32/float64 or complex64/complex128."""
    if x.dtype.is_complex or x.dtype in (_C.float32, _C.float64):
        return x
    if x.dtype in (_C.float16, _C.bfloat16):
        return x.to(_C.float32)
    return x.to(_C.get_default_dtype())


def _complex(x):
    x = _floating(x)
    return x if x.dtype.is_complex else x.to(_C.complex128 if x.dtype is _C.float64 else _C.complex64)


def _wrap(d: int, rank: int, name: str) -> int:
    if rank == 0:  # torch's maybe_wrap_dim words a 0-d tensor's case of its own
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -rank <= d < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {d})")
    return d % rank


def _resize(x, dims, sizes, name):
    """x with each dim in dims trimmed or zero-padded (at the end) to its size."""
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        have = x.shape[d]
        if n < have:
            x = x.narrow(d, 0, n)
        elif n > have:
            pad_shape = list(x.shape)
            pad_shape[d] = n - have
            x = _F.cat([x, _F.zeros(pad_shape, dtype=x.dtype)], d)
    return x


def _dims_and_sizes(x, s, dim, name, default_all: bool):
    rank = x.dim()
    if dim is None:
        if s is None:
            dims = list(range(rank)) if default_all else list(range(max(rank - 2, 0), rank))
        else:
            dims = list(range(rank - len(s), rank))
    else:
        dims = [_wrap(int(d), rank, name) for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{name} dims must be unique")
    if s is None:
        sizes = [-1] * len(dims)
    else:
        sizes = [int(n) for n in s]
        if len(sizes) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same length")
        if len(dims) > rank:
            raise RuntimeError(f"Got shape with {len(sizes)} values but input tensor only has {rank} dimensions.")
    return dims, sizes


# --- complex to complex -----------------------------------------------------------------------

def _c2c(name, x, s, dim, norm, forward, default_all, out):
    _require_fft_tensor(x, name)
    dims, sizes = _dims_and_sizes(x, s, dim, name, default_all)
    x = _resize(_complex(x), dims, sizes, name)
    return _write_out(_F._fft_c2c(x, dims, _norm_code(norm, forward), forward), out)


@_checked_signature("fft_fft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.fft: the 1-D discrete Fourier transform along ``dim``."""
    return _c2c("fft", input, None if n is None else [n], [dim], norm, True, True, out)


@_checked_signature("fft_ifft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.ifft: the 1-D inverse transform along ``dim``."""
    return _c2c("ifft", input, None if n is None else [n], [dim], norm, False, True, out)


@_checked_signature("fft_fft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c("fft2", input, s, dim, norm, True, False, out)


@_checked_signature("fft_ifft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c("ifft2", input, s, dim, norm, False, False, out)


@_checked_signature("fft_fftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c("fftn", input, s, dim, norm, True, True, out)


@_checked_signature("fft_ifftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c("ifftn", input, s, dim, norm, False, True, out)


# --- real to complex and back ----------------------------------------------------------------

def _r2c(name, x, s, dim, norm, default_all, out):
    _require_fft_tensor(x, name)
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {_scalar_type_name(x.dtype)}")
    dims, sizes = _dims_and_sizes(x, s, dim, name, default_all)
    x = _resize(_floating(x), dims, sizes, name)
    return _write_out(_F._fft_r2c(x, dims, _norm_code(norm, True), True), out)


def _c2r(name, x, s, dim, norm, default_all, out):
    _require_fft_tensor(x, name)
    dims, sizes = _dims_and_sizes(x, s, dim, name, default_all)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = dims[-1]
    last_size = sizes[-1] if sizes[-1] != -1 else 2 * (x.shape[last] - 1)
    if last_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_size}) specified")
    sizes = sizes[:-1] + [last_size // 2 + 1]
    x = _resize(_complex(x), dims, sizes, name)
    return _write_out(_F._fft_c2r(x, dims, _norm_code(norm, False), last_size), out)


@_checked_signature("fft_rfft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.rfft: the one-sided transform of a real signal along ``dim``."""
    return _r2c("rfft", input, None if n is None else [n], [dim], norm, True, out)


@_checked_signature("fft_irfft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.irfft: the real signal of a one-sided spectrum (length ``n``, default 2*(m-1))."""
    return _c2r("irfft", input, None if n is None else [n], [dim], norm, True, out)


@_checked_signature("fft_rfft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _r2c("rfft2", input, s, dim, norm, False, out)


@_checked_signature("fft_irfft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2r("irfft2", input, s, dim, norm, False, out)


@_checked_signature("fft_rfftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _r2c("rfftn", input, s, dim, norm, True, out)


@_checked_signature("fft_irfftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2r("irfftn", input, s, dim, norm, True, out)


def _conj(x):
    x = _complex(x)
    return _F.conj_physical(x)


@_checked_signature("fft_hfft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.hfft: the real spectrum of a Hermitian-symmetric signal given by its first half."""
    _require_fft_tensor(input, "hfft")
    return irfft(_conj(input), n, dim, _swap_norm(norm), out=out)


@_checked_signature("fft_ihfft(Tensor input, int? n, int dim, str? norm, *, Tensor? out)")
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.ihfft: the inverse of hfft (one-sided)."""
    _require_fft_tensor(input, "ihfft")
    return _write_out(_F.conj_physical(rfft(input, n, dim, _swap_norm(norm))), out)


@_checked_signature("fft_hfft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _require_fft_tensor(input, "hfft2")
    return irfft2(_conj(input), s, dim, _swap_norm(norm), out=out)


@_checked_signature("fft_ihfft2(Tensor input, int[1]? s, int[1] dim, str? norm, *, Tensor? out)")
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _require_fft_tensor(input, "ihfft2")
    return _write_out(_F.conj_physical(rfft2(input, s, dim, _swap_norm(norm))), out)


@_checked_signature("fft_hfftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    _require_fft_tensor(input, "hfftn")
    return irfftn(_conj(input), s, dim, _swap_norm(norm), out=out)


@_checked_signature("fft_ihfftn(Tensor input, int[1]? s, int[1]? dim, str? norm, *, Tensor? out)")
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    _require_fft_tensor(input, "ihfftn")
    return _write_out(_F.conj_physical(rfftn(input, s, dim, _swap_norm(norm))), out)


# --- frequencies and shifts ------------------------------------------------------------------

@_checked_signature("fft_fftfreq(int n, float d, *, Tensor? out, ScalarType? dtype)")
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.fft.fftfreq: [0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1] / (d * n)."""
    dtype = dtype or _C.get_default_dtype()
    # from arange, not a Python list: a huge n fails at the allocation (torch's error), not after minutes
    index = _F.arange(n, dtype=_C.float64)
    values = _F.where(index < (n + 1) // 2, index, index - n)
    result = values.div(d * n).to(dtype) if n else _F.zeros([0], dtype=dtype)
    return _finish_freq(result, out, requires_grad)


@_checked_signature("fft_rfftfreq(int n, float d, *, Tensor? out, ScalarType? dtype)")
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.fft.rfftfreq: [0, 1, ..., n//2] / (d * n)."""
    dtype = dtype or _C.get_default_dtype()
    result = _F.arange(n // 2 + 1, dtype=_C.float64).div(d * n).to(dtype)
    return _finish_freq(result, out, requires_grad)


def _finish_freq(result, out, requires_grad):
    result = _write_out(result, out)
    if requires_grad:
        result.requires_grad_()
    return result


def _shift_dims(x, dim):
    if dim is None:
        return list(range(x.dim()))
    return [_wrap(int(d), x.dim(), "fftshift") for d in ([dim] if isinstance(dim, int) else dim)]


def _roll(x, dims, shift_of):
    """x rolled along each dim by shift_of(size), as two narrowed pieces joined (complex included)."""
    for d in dims:
        size = x.shape[d]
        r = shift_of(size) % size if size else 0
        if r:
            x = _F.cat([x.narrow(d, size - r, r), x.narrow(d, 0, size - r)], d)
    return x


@_checked_signature("fft_fftshift(Tensor input, int[1]? dim)")
def fftshift(input, dim=None):
    """torch.fft.fftshift: rolls the zero frequency to the centre of each dim."""
    _require_fft_tensor(input, "fftshift")
    return _roll(input, _shift_dims(input, dim), lambda n: n // 2)


@_checked_signature("fft_ifftshift(Tensor input, int[1]? dim)")
def ifftshift(input, dim=None):
    """torch.fft.ifftshift: the inverse of fftshift."""
    _require_fft_tensor(input, "ifftshift")
    return _roll(input, _shift_dims(input, dim), lambda n: -(n // 2))
