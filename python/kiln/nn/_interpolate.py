"""F.interpolate, F.upsample and the deprecated F.upsample_nearest / upsample_bilinear
(re-exported by kiln.nn.functional): every mode
torch 2.13 has -- nearest, nearest-exact, (bi/tri)linear, bicubic, area,
antialiased bilinear / bicubic and lanczos -- composed from kiln's ops.

Note [Interpolation as per-dim plans]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each of torch's interpolation kernels is separable: along a spatial dim, output
position i reads a few input positions ("taps") with fixed weights. A dim's
plan is a pair of [out, K] tables (tap indices, tap weights) built in numpy by
torch's formulas in the compute type torch uses (float32 for float32 / float16
/ bfloat16, float64 for float64), so the same taps are picked:
  nearest        1 tap, floor(i * scale) (with the shortcuts of torch's 2-D
                 kernel: out == in copies, out == 2 * in reads i // 2);
                 nearest-exact floor((i + .5) * scale)
  linear         2 taps, source index clamped at 0, weight of the upper tap in
                 [0, 1] (out == in is a copy, as in torch)
  bicubic        4 taps, Keys' cubic convolution with A = -0.75, the tap
                 indices clamped into the dim (its border)
  antialias      a window of input positions around the output centre, the
                 filter (triangle, cubic A = -0.5, lanczos-3) widened by the
                 scale when downsampling, weights normalised to sum 1
Applying a plan is, per tap column, one index_select along the dim times the
column's weights, summed over the K columns; its gradient is index_select's, a
scatter-add of the weighted gradient, which is torch's backward. Dims whose plan
is the identity are skipped; the others are applied in order of growing
out / in, so downsampled dims shrink the tensor first. float16 / bfloat16
inputs of the weighted modes are computed in float32 (torch's opmath) and
rounded once at the end (torch also rounds its weights to the reduced type:
the two agree to a unit in the last place). "area" is adaptive_avg_pool{1,2,3}d,
as in torch.

Knowing differences from torch 2.13 (torch's own forward / backward disagree
there, or its result is a bug; kiln keeps value and gradient consistent):
  * antialias with an output width of 1 and a resized height: torch repeats
    output row 0 down the whole column; kiln returns the true resample
    (torch's gradient is the true one).
  * antialias, scale_factor given (no recompute) and a dim whose size does not
    change: torch's forward copies that dim but its backward uses the scale's
    weights; kiln copies in both.
  * bicubic, scale_factor given, both output sizes equal to the input's: torch's
    backward is a copy, its forward resamples; kiln's gradient is the forward's.
  * 1-D / 3-D nearest, scale_factor given, out == in or out == 2 * in: torch's
    forward uses the scale, its backward the 2-D kernel's shortcuts; kiln's
    gradient is the forward's.
  * an infinite input read by a zero-weight padding tap of an antialias window
    gives NaN where torch (which skips those taps) gives inf.
  * uint8 input: only the nearest modes (torch's fixed-point uint8 kernels for
    the other modes are not reproduced; kiln raises NotImplementedError).

Imports: kiln._C, kiln._creation, kiln.nn._pooling and kiln.nn._pool3d only.
"""

from __future__ import annotations

import functools
import math
import warnings
from numbers import Integral
from typing import Optional

import numpy as np

from kiln import _C
from kiln._arguments import checked_signature
from kiln._creation import tensor
from kiln.nn._pool3d import adaptive_avg_pool3d
from kiln.nn._pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate", "upsample"]

_MODES_TEXT = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}
_FLOATS = (_C.float32, _C.float64, _C.float16, _C.bfloat16)


def _scalar_name(dtype) -> str:
    """torch's C++ name of a dtype, as its "not implemented for 'Long'" errors spell it."""
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
             "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    text = str(dtype).rsplit(".", 1)[-1]
    return names.get(text, text)


# --- argument handling (torch.nn.functional.interpolate's Python layer) -------------------------
def _is_integer(value) -> bool:
    if isinstance(value, (Integral, np.integer)):
        return True
    # a tensor as torch's parser takes one for an int: one element of an integer dtype
    return (isinstance(value, _C.TensorBase) and value.numel() == 1 and not value.dtype.is_floating_point
            and not value.dtype.is_complex)


def _as_int(value) -> int:
    if not _is_integer(value):
        raise TypeError(f"kiln.nn.functional.interpolate(): argument 'output_size' must be a tuple of ints, but "
                        f"found element of type {type(value).__name__}")
    return int(value)


def _as_float(value) -> float:
    try:
        if isinstance(value, _C.TensorBase):  # torch's parser takes no tensor in its float[] scale_factors
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"kiln.nn.functional.interpolate(): argument 'scale_factors' must be a tuple of floats, but "
                        f"found element of type {type(value).__name__}") from None


def _output_plan(input, size, scale_factor, mode: str, recompute_scale_factor):
    """(output sizes, scale factors or None) as torch's Python layer passes them to its C++ ops."""
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            if not all(_is_integer(s) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(s) for s in size]}")
            output_size = [int(s) for s in size]
        else:
            output_size = [_as_int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [_as_float(s) for s in scale_factor]
        else:
            scale_factors = [_as_float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        # Python's int(): OverflowError for inf, ValueError for nan, as torch's _sym_int.
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    return output_size, scale_factors


def _resolve_sizes(input, output_size, scale_factors) -> list:
    """The output sizes the C++ op computes from the scale factors (floor(in * scale))."""
    if output_size is not None:
        return list(output_size)
    sizes = []
    for i, scale in enumerate(scale_factors):
        value = float(input.shape[i + 2]) * scale
        if not math.isfinite(value) or abs(value) >= 2.0 ** 63:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        sizes.append(math.floor(value))
    return sizes


def _check_sizes(input, sizes: list) -> None:
    """torch's upsample_{1,2,3}d_common_check."""
    spatial = list(input.shape[2:])
    names = ["D", "H", "W"][3 - len(spatial):]
    if min(spatial) <= 0 or min(sizes) <= 0:
        given = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        wanted = ", ".join(f"{n}: {s}" for n, s in zip(names, sizes))
        joiner = " and output" if len(spatial) == 1 else " output"
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({given}){joiner} "
                           f"({wanted})")
    if math.prod(input.shape[1:]) == 0:
        raise RuntimeError(f"Non-empty {input.dim()}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")


def _kernel_name(mode: str, dims: int, antialias: bool) -> str:
    """The torch CPU kernel whose "not implemented for" error a dtype gets."""
    if antialias:
        return "compute_index_ranges_weights"
    if mode in ("nearest", "nearest-exact"):
        return "upsample_nearest2d_channels_last" if dims == 2 else "compute_indices_weights_nearest"
    if mode == "bilinear":
        return "upsample_bilinear2d_channels_last"
    if mode == "bicubic":
        return "compute_indices_weights_cubic"
    if mode == "area":
        return "adaptive_avg_pool3d_cpu" if dims == 3 else "adaptive_avg_pool2d"
    return "compute_indices_weights_linear"


def _check_dtype(input, mode: str, antialias: bool) -> None:
    dtype = input.dtype
    floats = _FLOATS
    if dtype in floats[:2] or (dtype in floats and not antialias):
        return
    if dtype == _C.uint8 and mode in ("nearest", "nearest-exact"):
        return
    if dtype == _C.uint8 and (antialias or mode in ("bilinear", "bicubic")):
        raise NotImplementedError(f"kiln.nn.functional.interpolate: uint8 input is supported by the nearest modes "
                                  f"only, not by mode '{mode}'{' with antialias' if antialias else ''} (torch's "
                                  "fixed-point uint8 kernel); convert the input to float first")
    raise NotImplementedError(f'"{_kernel_name(mode, input.dim() - 2, antialias)}" not implemented for '
                              f"'{_scalar_name(dtype)}'")


# --- per-dim plans ------------------------------------------------------------------------------
def _scale(in_size: int, out_size: int, scale, align_corners: bool, ftype):
    """torch's area_pixel_compute_scale: input step per output step, in the compute type."""
    if align_corners:
        return ftype(in_size - 1) / ftype(out_size - 1) if out_size > 1 else ftype(0)
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(in_size) / ftype(out_size)


def _nearest_plan(in_size: int, out_size: int, scale, exact: bool, shortcuts: bool):
    """[out, 1] taps of nearest, floor(i * scale), or nearest-exact, floor((i + 0.5) * scale); torch computes both
    in float32 for every dtype. Its 2-D nearest kernel (nearest_idx) copies when out == in and takes i // 2 when
    out == 2 * in whatever the scale factor; its 1-D and 3-D kernels do not."""
    dst = np.arange(out_size)
    if shortcuts and out_size == in_size:
        return None
    if shortcuts and out_size == 2 * in_size:
        return (dst >> 1)[:, None], None
    step = _scale(in_size, out_size, scale, False, np.float32)
    if exact:
        src = np.floor(((dst + 0.5) * np.float64(step)).astype(np.float32))
    else:
        src = np.floor(dst.astype(np.float32) * step)
    return np.minimum(src.astype(np.int64), in_size - 1)[:, None], None


def _source(in_size: int, out_size: int, scale, align_corners: bool, cubic: bool, ftype):
    """torch's area_pixel_compute_source_index for every output position; and the lower tap
    (guard_index_and_lambda: floor taken in float32, capped at in - 1) with its fraction clamped to [0, 1]."""
    step = _scale(in_size, out_size, scale, align_corners, ftype)
    dst = np.arange(out_size, dtype=ftype)
    if align_corners:
        src = step * dst
    else:
        src = step * (dst + ftype(0.5)) - ftype(0.5)
        if not cubic:
            src = np.maximum(src, ftype(0))
    low = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), in_size - 1)
    frac = np.clip(src - low.astype(ftype), ftype(0), ftype(1)).astype(ftype)
    return low, frac


def _linear_plan(in_size: int, out_size: int, scale, align_corners: bool, ftype):
    if out_size == in_size:
        return None
    low, frac = _source(in_size, out_size, scale, align_corners, False, ftype)
    high = np.where(low < in_size - 1, low + 1, low)
    return np.stack([low, high], 1), np.stack([ftype(1) - frac, frac], 1)


def _cubic_near(x, a):
    """Keys' cubic convolution for |x| <= 1."""
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic_far(x, a):
    """Keys' cubic convolution for 1 < |x| < 2."""
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _cubic_plan(in_size: int, out_size: int, scale, align_corners: bool, ftype):
    low, t = _source(in_size, out_size, scale, align_corners, True, ftype)
    a = ftype(-0.75)
    one = ftype(1)
    weights = np.stack([_cubic_far(t + one, a), _cubic_near(t, a), _cubic_near(one - t, a),
                        _cubic_far(ftype(2) - t, a)], 1).astype(ftype)
    taps = np.clip(low[:, None] - 1 + np.arange(4)[None, :], 0, in_size - 1)
    return taps, weights


def _triangle(x, ftype):
    x = np.abs(x)
    return np.where(x < 1, ftype(1) - x, ftype(0)).astype(ftype)


def _keys_half(x, ftype):
    x = np.abs(x)
    a = ftype(-0.5)
    return np.where(x < 1, _cubic_near(x, a), np.where(x < 2, _cubic_far(x, a), ftype(0))).astype(ftype)


def _lanczos3(x, ftype):
    x = np.abs(x).astype(np.float64)
    safe = np.where(x == 0, 1.0, x)
    value = 3.0 * np.sin(np.pi * safe) * np.sin(np.pi * safe / 3.0) / (np.pi * np.pi * safe * safe)
    return np.where(x == 0, 1.0, np.where(x < 3, value, 0.0)).astype(ftype)


# filter, and its support (half-width) at scale 1, of the antialiased modes
_AA_FILTERS = {"bilinear": (_triangle, 1.0), "bicubic": (_keys_half, 2.0), "lanczos": (_lanczos3, 3.0)}


def _antialias_plan(in_size: int, out_size: int, scale, align_corners: bool, mode: str, ftype):
    """torch's _compute_indices_min_size_weights_aa: the input window [xmin, xmin + xsize) around each output
    centre, the filter stretched by the scale when downsampling, the weights normalised; windows padded to
    the widest with zero weights on their first position."""
    if out_size == in_size:
        return None
    filt, half = _AA_FILTERS[mode]
    step = _scale(in_size, out_size, scale, align_corners, ftype)
    support = ftype(half * step) if step >= 1 else ftype(half)
    width = int(math.ceil(support)) * 2 + 1
    inverse = ftype(1.0 / float(step)) if step >= 1 else ftype(1)
    centre = (np.float64(step) * (np.arange(out_size) + 0.5)).astype(ftype)
    xmin = np.maximum(np.trunc((centre - support).astype(np.float64) + 0.5), 0).astype(np.int64)
    xmax = np.minimum(np.trunc((centre + support).astype(np.float64) + 0.5).astype(np.int64), in_size)
    xsize = np.clip(xmax - xmin, 0, width)
    offsets = np.arange(width)[None, :]
    valid = offsets < xsize[:, None]
    position = ((xmin[:, None] + offsets) - centre[:, None]).astype(ftype)
    argument = ((position.astype(np.float64) + 0.5) * np.float64(inverse)).astype(ftype)  # as torch rounds it
    weights = np.where(valid, filt(argument, ftype), ftype(0))
    total = weights.sum(1, dtype=ftype)
    weights = np.where(total[:, None] != 0, weights / np.where(total == 0, ftype(1), total)[:, None], weights)
    taps = np.where(valid, xmin[:, None] + offsets, np.minimum(xmin, in_size - 1)[:, None])
    return taps, weights.astype(ftype)


@functools.lru_cache(maxsize=512)
def _plan(kind: str, in_size: int, out_size: int, scale, align_corners: bool, ftype_name: str):
    """A dim's (taps [out, K], weights [out, K] or None), or None for a copy; cached, read-only."""
    ftype = np.dtype(ftype_name).type
    if kind in ("nearest", "nearest-2d", "nearest-exact"):
        plan = _nearest_plan(in_size, out_size, scale, kind == "nearest-exact", kind == "nearest-2d")
    elif kind == "linear":
        plan = _linear_plan(in_size, out_size, scale, align_corners, ftype)
    elif kind == "bicubic":
        plan = _cubic_plan(in_size, out_size, scale, align_corners, ftype)
    else:  # "aa-bilinear", "aa-bicubic", "aa-lanczos"
        plan = _antialias_plan(in_size, out_size, scale, align_corners, kind[3:], ftype)
    if plan is not None:
        for array in plan:
            if array is not None:
                array.setflags(write=False)
    return plan


# --- applying plans -----------------------------------------------------------------------------
def _tensor(array, dtype):
    return tensor(np.array(array, copy=True, order="C"), dtype=dtype)  # plans are cached read-only


def _apply(x, dim: int, taps: np.ndarray, weights: Optional[np.ndarray]):
    """x resampled along ``dim`` by a plan: per tap column, an index_select scaled by its weights, summed
    (measured faster in kiln than one gather of all taps and a sum, and, unlike a dense matmul with the
    [out, in] matrix, a NaN or inf stays local to the outputs that read it, as in torch)."""
    if weights is None:
        return x.index_select(dim, _tensor(taps[:, 0], _C.int64))
    shape = (taps.shape[0],) + (1,) * (x.dim() - dim - 1)
    out = None
    for j in range(taps.shape[1]):
        term = x.index_select(dim, _tensor(taps[:, j], _C.int64)) * _tensor(weights[:, j], x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _resample(input, kind: str, sizes: list, scales, align_corners: bool):
    """input resampled along each spatial dim by its plan (see Note [Interpolation as per-dim plans])."""
    weighted = kind not in ("nearest", "nearest-2d", "nearest-exact")
    x = input
    if weighted and input.dtype in (_C.float16, _C.bfloat16):
        x = input.to(_C.float32)
    ftype_name = "float64" if x.dtype == _C.float64 else "float32"
    spatial = list(input.shape[2:])
    scales = scales if scales is not None else [None] * len(sizes)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i] / spatial[i])
    for i in order:
        scale = None if scales[i] is None else float(scales[i])
        plan = _plan(kind, spatial[i], sizes[i], scale, bool(align_corners), ftype_name)
        if plan is not None:
            x = _apply(x, i + 2, *plan)
    if x is input:  # every dim a copy: torch still returns a new tensor
        return input.clone()
    return x.to(input.dtype) if x.dtype != input.dtype else x


def _area(input, sizes: list):
    pools = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}
    return pools[input.dim()](input, sizes)


# --- the public functions -----------------------------------------------------------------------
def _dims_error(input, mode: str):
    return NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                               f"the modes: {_MODES_TEXT} (got {mode})")


@checked_signature("interpolate(Tensor input)")
def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: Optional[bool] = None,
                recompute_scale_factor: Optional[bool] = None, antialias: bool = False):
    """torch.nn.functional.interpolate: same modes, arguments, checks and messages (see Note
    [Interpolation as per-dim plans] for how, and the module docstring for the knowing differences)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    output_size, scale_factors = _output_plan(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    dims = input.dim() - 2
    if mode == "lanczos" and dims == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    elif mode in _LINEAR_DIMS and dims in (1, 2, 3) and _LINEAR_DIMS[mode] != dims:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_DIMS[mode] + 2}D input")
    known = mode in ("nearest", "nearest-exact", "area") + tuple(_LINEAR_DIMS) or mode in ("bicubic", "lanczos")
    if not known or dims not in (1, 2, 3) or (mode in ("bicubic", "lanczos") and dims != 2):
        raise _dims_error(input, mode)
    if mode == "area":
        if input.dtype not in _FLOATS:
            raise NotImplementedError(f'"{_kernel_name(mode, dims, False)}" not implemented for '
                                      f"'{_scalar_name(input.dtype)}'")
        return _area(input, output_size)
    sizes = _resolve_sizes(input, output_size, scale_factors)
    _check_sizes(input, sizes)
    _check_dtype(input, mode, antialias)
    if mode == "nearest" and dims == 2:
        kind = "nearest-2d"
    elif mode in ("nearest", "nearest-exact"):
        kind = mode
    elif antialias:
        kind = "aa-" + mode
    else:
        kind = "bicubic" if mode == "bicubic" else "linear"
    return _resample(input, kind, sizes, scale_factors, bool(align_corners))


@checked_signature("upsample(Tensor input)")
def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: Optional[bool] = None):
    """torch.nn.functional.upsample: deprecated spelling of interpolate (warns as torch does)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


@checked_signature("upsample_nearest(Tensor input)")
def upsample_nearest(input, size=None, scale_factor=None):
    """F.upsample_nearest: interpolate(mode='nearest'), with torch's deprecation warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


@checked_signature("upsample_bilinear(Tensor input)")
def upsample_bilinear(input, size=None, scale_factor=None):
    """F.upsample_bilinear: interpolate(mode='bilinear', align_corners=True), with the deprecation warning."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)

