"""F.affine_grid (4-D and 5-D sizes) and F.grid_sample (4-D input: bilinear,
nearest and bicubic; 5-D input: bilinear (trilinear) and nearest; zeros,
border and reflection padding) composed from kiln's ops; re-exported by
kiln.nn.functional.

Note [grid_sample as gathers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The grid's normalised [-1, 1] coordinates (x, y[, z] for the W, H[, D] dims)
become pixel coordinates (with align_corners, -1 and 1 are the centres of the
corner pixels; without, their outer edges), then padding_mode folds them into
the input: border clamps, reflection mirrors about the edges (the mirrored
slope flips the gradient's sign) then clamps. Each of the (up to) 2 ** dims
neighbours is one gather from the flattened [N, C, (D *) H * W] input at a
detached flat index, times its (bi/tri)linear weight, which is differentiable
in the coordinate; a neighbour outside the input (zeros padding) is masked out.
So the gradient of the input is gather's (a scatter-add of the weights) and the
grid's is that of the weights, as torch computes them. Nearest mode rounds half
to even, as torch's nearbyint, and gives the grid a zero gradient, as torch does.

Bicubic (4-D only, as in torch) reads the 4 x 4 pixels around the unpadded
coordinate with Keys' cubic convolution weights (A = -0.75) of its fractional
part; torch applies the padding mode to each of the 16 tap positions (border
clamps a tap, reflection mirrors it, zeros drops it), so the padding moves
which pixel a tap reads but not its weight, and the grid's gradient comes from
the weights only -- kiln does the same. float16 / bfloat16 are computed in
float32 and rounded once at the end.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from kiln import _C
from kiln._arguments import checked_signature
from kiln._creation import tensor
from kiln.nn._ops import functions as _functions

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _f():
    return _C._functions


def _tensor(values, dtype):
    return tensor(values, dtype=dtype)


# --- affine_grid --------------------------------------------------------------------------------
def _base_coordinates(n: int, align_corners: bool) -> np.ndarray:
    """The normalised centres of n pixels: [-1, 1] end to end (align_corners) or shrunk by (n - 1) / n."""
    if n <= 1:
        return np.zeros(max(n, 1))
    steps = np.linspace(-1.0, 1.0, n)
    return steps if align_corners else steps * (n - 1) / n


@checked_signature("affine_grid(Tensor theta)")
def affine_grid(theta, size, align_corners=None):
    """The sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of a batch of affine matrices theta."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    size = tuple(int(s) for s in size)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{_C.Size(theta.shape)}.")
        spatial = size[2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{_C.Size(theta.shape)}.")
        spatial = size[2:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:  # torch skips this check when it warns about a unit-size grid
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    if theta.shape[0] != n:
        rows = theta.shape[-1]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {rows}] but got: "
                           f"[{theta.shape[0]}, {rows}].")
    # Columns x (the last dim), y, (z), 1 over the output positions in row-major order.
    axes = [_base_coordinates(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(spatial)))]
    base = _tensor(np.stack(columns, 1).tolist(), theta.dtype)              # [P, dims + 1]
    grid = base.unsqueeze(0).expand(n, *base.shape).matmul(theta.transpose(1, 2))
    return grid.reshape(n, *spatial, len(spatial))


# --- grid_sample --------------------------------------------------------------------------------
def _check_grid_sample(input, grid, mode: str, padding_mode: str) -> None:
    """torch's checks, in its order: the Python layer's mode names, then grid_sampler's common, 2-D / 3-D,
    bicubic, kernel-dtype and dtype-match checks."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    for i in range(2, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if input.dim() == 4 and grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if input.dim() != 4 and (input.dim() != 5 or grid.dim() != 5):
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if input.dim() == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if input.dim() == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar(input.dtype)}\'')
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(input.dtype)} but found {_scalar(grid.dtype)}")


def _scalar(dtype) -> str:
    return {_C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
            _C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
            _C.bool: "Bool"}.get(dtype, str(dtype))


def _reflect(coord, twice_low: int, twice_high: int):
    """coord mirrored into [twice_low / 2, twice_high / 2] (the slope, and so the gradient, flips per mirror)."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = _functions.abs(coord - low)
    flips = _functions.floor(distance.detach() / span)
    extra = distance - flips * span
    even = _functions.remainder(flips, 2) == 0
    return _f().where(even, extra + low, (span - extra) + low)


def _unnormalize(coord, size: int, align_corners: bool):
    """A normalised grid coordinate as a pixel coordinate of a dim of ``size``."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _pad(coord, size: int, padding_mode: str, align_corners: bool):
    """torch's compute_coordinates: border clamps, reflection mirrors then clamps, zeros leaves as is."""
    if padding_mode == "border":
        return _functions.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return _functions.clamp(coord, 0, size - 1)
    return coord


def _safe(coord):
    """Infinite or huge coordinates read nothing (torch's safe_downgrade_to_int_range)."""
    safe = _functions.isfinite(coord) & (_functions.abs(coord) < 2.0 ** 30)
    return _f().where(safe, coord, _f().full_like(coord, -100.0))


def _gather(flat, coords: list, sizes: list):
    """input values at the integer (detached) coordinates (x, y[, z]) of shape [N, *out], zero where any is
    outside its dim of ``sizes`` (W, H[, D]); also that in-bounds mask, [N, 1, *out]."""
    n, c = flat.shape[0], flat.shape[1]
    inside = None
    index = None
    stride = 1
    for coord, size in zip(coords, sizes):
        ok = (coord >= 0) & (coord <= size - 1)
        inside = ok if inside is None else inside & ok
        term = _functions.clamp(coord, 0, size - 1) * stride
        index = term if index is None else index + term
        stride *= size
    index = index.to(_C.int64)
    out_shape = tuple(coords[0].shape[1:])
    points = int(np.prod(out_shape))  # explicit: with n = 0, -1 would not say how many
    index = index.reshape(n, 1, points).expand(n, c, points)
    values = flat.gather(2, index).reshape(n, c, *out_shape)
    inside = inside.unsqueeze(1)
    return _f().where(inside, values, _f().zeros_like(values)), inside


def _linear(flat, coords: list, sizes: list):
    """(Bi/tri)linear: the 2 ** dims neighbours of the padded coordinates, weighted by their opposite volumes."""
    lows = [_functions.floor(c.detach()) for c in coords]
    out = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        taps, weight = [], None
        for bit, coord, low in zip(corner, coords, lows):
            taps.append(low + bit)
            w = (coord - low) if bit else (low + 1 - coord)
            weight = w if weight is None else weight * w
        values, _ = _gather(flat, taps, sizes)
        term = values * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _nearest(flat, coords: list, sizes: list):
    """The nearest pixel (half to even); the grid is linked with a zero gradient, as torch gives it zeros."""
    values, _ = _gather(flat, [_functions.round(c.detach()) for c in coords], sizes)
    total = None
    for c in coords:
        total = c if total is None else total + c
    link = _f().where(_f().zeros_like(total, dtype=_C.bool), total, _f().zeros_like(total))
    return values + link.unsqueeze(1)


def _cubic_weights(t):
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps around a point t past the second."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(flat, x, y, width: int, height: int, padding_mode: str, align_corners: bool):
    """4 x 4 taps around the unpadded (x, y); each tap's position is padded on its own (see the Note), and
    one still outside the int range after that reads nothing."""
    x0, y0 = _functions.floor(x.detach()), _functions.floor(y.detach())
    wx, wy = _cubic_weights(x - x0), _cubic_weights(y - y0)
    columns = [_safe(_pad(x0 + (j - 1), width, padding_mode, align_corners)) for j in range(4)]
    out = None
    for i in range(4):
        row = _safe(_pad(y0 + (i - 1), height, padding_mode, align_corners))
        for j in range(4):
            values, _ = _gather(flat, [columns[j], row], [width, height])
            term = values * (wx[j] * wy[i]).unsqueeze(1)
            out = term if out is None else out + term
    return out


@checked_signature("grid_sample(Tensor input, Tensor grid)")
def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None):
    """input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]), or input [N, C, D, H, W] at grid
    [N, Do, Ho, Wo, 3] ((x, y, z)); see Note [grid_sample as gathers]."""
    _check_grid_sample(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    dtype = input.dtype
    if dtype in (_C.float16, _C.bfloat16):
        input, grid = input.to(_C.float32), grid.to(_C.float32)
    n, c = input.shape[0], input.shape[1]
    sizes = list(reversed(input.shape[2:]))                      # W, H[, D]: the order of the grid's coordinates
    flat = input.reshape(n, c, int(np.prod(sizes)))
    raw = [_unnormalize(grid.select(-1, k), size, align_corners) for k, size in enumerate(sizes)]
    if mode == "bicubic":
        out = _bicubic(flat, raw[0], raw[1], sizes[0], sizes[1], padding_mode, align_corners)
    else:
        coords = [_safe(_pad(r, size, padding_mode, align_corners)) for r, size in zip(raw, sizes)]
        out = _nearest(flat, coords, sizes) if mode == "nearest" else _linear(flat, coords, sizes)
    return out.to(dtype) if out.dtype != dtype else out
