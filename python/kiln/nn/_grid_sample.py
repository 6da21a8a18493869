"""F.affine_grid and F.grid_sample (4-D input; bilinear and nearest; zeros,
border and reflection padding) composed from kiln's ops; re-exported by
kiln.nn.functional.

Note [grid_sample as gathers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The grid's normalised [-1, 1] coordinates become pixel coordinates (with
align_corners, -1 and 1 are the centres of the corner pixels; without, their
outer edges), then padding_mode folds them into the input: border clamps,
reflection mirrors about the edges (the mirrored slope flips the gradient's
sign) then clamps. Each of the (up to) four neighbours is one gather from the
[N, C, H * W] input at a detached flat index, times its bilinear weight, which
is differentiable in the coordinate; a neighbour outside the input (zeros
padding) is masked out. So the gradient of the input is gather's (a scatter-add
of the weights) and the grid's is that of the weights, as torch computes them.
Nearest mode rounds half to even, as torch's nearbyint, and gives the grid a
zero gradient, as torch does.
"""

from __future__ import annotations

import warnings

import numpy as np

from kiln import _C
from kiln.nn._ops import ops

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _f():
    return _C._functions


def _tensor(values, dtype):
    from kiln._creation import tensor

    return tensor(values, dtype=dtype)


# --- affine_grid --------------------------------------------------------------------------------
def _base_coordinates(n: int, align_corners: bool) -> np.ndarray:
    """The normalised centres of n pixels: [-1, 1] end to end (align_corners) or shrunk by (n - 1) / n."""
    if n <= 1:
        return np.zeros(max(n, 1))
    steps = np.linspace(-1.0, 1.0, n)
    return steps if align_corners else steps * (n - 1) / n


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
    if min(size) <= 0:
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
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(input.dtype)} but found {_scalar(grid.dtype)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if input.dim() == 4 and grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got {sizes}")
    for i in range(2, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if input.dim() == 5:
        raise NotImplementedError("kiln.nn.functional.grid_sample: 5-D (volumetric) input is not supported yet")
    if mode == "bicubic":
        raise NotImplementedError("kiln.nn.functional.grid_sample: mode 'bicubic' is not supported yet")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"grid_sampler_2d_cpu_kernel_impl" not implemented for '
                                  f"'{_scalar(input.dtype)}'")


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
    distance = ops.abs(coord - low)
    flips = ops.floor(distance.detach() / span)
    extra = distance - flips * span
    even = ops.remainder(flips, 2) == 0
    return _f().where(even, extra + low, (span - extra) + low)


def _source_coordinate(coord, size: int, padding_mode: str, align_corners: bool):
    """A normalised grid coordinate as a pixel coordinate of a dim of ``size``, after the padding mode."""
    if align_corners:
        coord = (coord + 1) * ((size - 1) / 2)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        coord = ops.clamp(coord, 0, size - 1)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        coord = ops.clamp(coord, 0, size - 1)
    # Infinite or huge coordinates read nothing (torch's safe_downgrade_to_int_range).
    safe = ops.isfinite(coord) & (ops.abs(coord) < 2.0 ** 30)
    return _f().where(safe, coord, _f().full_like(coord, -100.0))


def _gather_corner(flat, ix, iy, width: int, height: int):
    """input values at the integer (detached) coordinates [N, Ho, Wo], zero outside; and the in-bounds mask."""
    n, c = flat.shape[0], flat.shape[1]
    inside = (ix >= 0) & (ix <= width - 1) & (iy >= 0) & (iy <= height - 1)
    index = (ops.clamp(iy, 0, height - 1) * width + ops.clamp(ix, 0, width - 1)).to(_C.int64)
    out_shape = tuple(ix.shape[1:])
    index = index.reshape(n, 1, -1).expand(n, c, index[0].numel())
    values = flat.gather(2, index).reshape(n, c, *out_shape)
    return values, inside.unsqueeze(1)


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None):
    """input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]); see Note [grid_sample as gathers]."""
    _check_grid_sample(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    n, c, height, width = input.shape
    flat = input.reshape(n, c, height * width)
    x = _source_coordinate(grid.select(-1, 0), width, padding_mode, align_corners)
    y = _source_coordinate(grid.select(-1, 1), height, padding_mode, align_corners)
    if mode == "nearest":
        values, inside = _gather_corner(flat, ops.round(x.detach()), ops.round(y.detach()), width, height)
        out = _f().where(inside, values, _f().zeros_like(values))
        # Link the grid with a zero gradient (torch's nearest mode gives the grid zeros, not None).
        link = _f().where(_f().zeros_like(x, dtype=_C.bool), x + y, _f().zeros_like(x))
        return out + link.unsqueeze(1)
    x0, y0 = ops.floor(x.detach()), ops.floor(y.detach())
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = x - x0, y - y0
    wx0, wy0 = x1 - x, y1 - y
    out = None
    for cx, cy, weight in ((x0, y0, wx0 * wy0), (x1, y0, wx1 * wy0), (x0, y1, wx0 * wy1), (x1, y1, wx1 * wy1)):
        values, inside = _gather_corner(flat, cx, cy, width, height)
        term = _f().where(inside, values * weight.unsqueeze(1), _f().zeros_like(values))
        out = term if out is None else out + term
    return out
