"""torch.segment_reduce: sum / mean / max / min / prod over segments of ``data`` given
by lengths or offsets, with torch's gradient formulas."""

from __future__ import annotations

import math

from kiln import _C
from kiln._arguments import checked_signature
from kiln._messages import _scalar_name
from kiln.autograd.function import Function
from kiln.autograd.grad_mode import no_grad

_F = _C._functions


_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min", "prod": "prod"}

_DIM_CHECK = ("Expected data.dim() >= {}.dim() to be true, but got false.  (Could this error message be improved?  "
              "If so, please report an enhancement request to PyTorch.)")


def _segment_offsets(data, axis, lengths, offsets, unsafe):
    """The (B, G + 1) int64 segment offsets (B: the flattened dims before axis) from lengths or
    offsets (offsets win when both are given), with torch's checks."""
    given, label = (offsets, "offsets") if offsets is not None else (lengths, "lengths")
    if data.dim() < given.dim():
        raise RuntimeError(_DIM_CHECK.format(label + "_value"))
    if axis != given.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {label} but got {axis}.")
    if tuple(given.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected {label} of shape {list(data.shape[:axis])} + [*] for data of "
                           f"shape {list(data.shape)} and axis {axis}, but got {list(given.shape)}")
    if given.dtype not in (_C.int32, _C.int64):
        kernel = "_segment_reduce_lengths_cpu_kernel1" if label == "lengths" else "_segment_reduce_offsets_cpu_kernel1"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_name(given.dtype)}'")
    batch = 1
    for size in given.shape[:-1]:
        batch *= size
    given = given.to(_C.int64).reshape(batch, given.shape[-1])
    if label == "offsets":
        return given
    if not unsafe:
        if given.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        if int(given.min()) < 0:
            raise RuntimeError("lengths contains negative value!")
        if not bool((given.sum(-1) == data.shape[axis]).all()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
    return _F.cat([_F.zeros(given.shape[0], 1, dtype=_C.int64), given.cumsum(-1)], -1)


def _segment_ids(offsets, size):
    """Each position along the axis's segment (B, size); positions in no segment get G."""
    groups = offsets.shape[1] - 1
    position = _F.arange(size, dtype=_C.int64).expand(offsets.shape[0], size).contiguous()
    starts, ends = offsets[:, :-1].contiguous(), offsets[:, 1:]
    segment = _F.searchsorted(starts, position, right=True) - 1
    clipped = segment.clamp(0, max(groups - 1, 0))
    inside = (segment >= 0) & (position < ends.gather(1, clipped)) if groups else _F.zeros_like(position).bool()
    return _F.where(inside, clipped, _F.full_like(clipped, groups))


def _segment_forward(data3, ids3, groups, reduce, initial):
    """The (B, G, R) reduction of data3 (B, S, R) over segment ids ids3 (B, S, R; G: no segment)."""
    shape = (data3.shape[0], groups + 1, data3.shape[2])
    if reduce in ("sum", "mean"):
        total = _F.full(shape, 0 if initial is None else initial, dtype=data3.dtype).scatter_add(1, ids3, data3)
        if reduce == "sum":
            return total[:, :groups]
        count = _F.zeros(shape, dtype=data3.dtype).scatter_add(1, ids3, _F.ones_like(data3))[:, :groups]
        mean = total[:, :groups] / count
        if initial is None:
            return mean
        return _F.where(count == 0, _F.full_like(mean, initial), mean)
    identity = {"prod": 1.0, "max": -math.inf, "min": math.inf}[reduce]
    start = _F.full(shape, identity if initial is None else initial, dtype=data3.dtype)
    op = {"prod": "prod", "max": "amax", "min": "amin"}[reduce]
    return start.scatter_reduce(1, ids3, data3, op, include_self=True)[:, :groups]


def _segment_backward(grad, data3, ids3, result, reduce, initial):
    """torch's _segment_reduce_backward on the (B, S, R) data: the gradient of each element."""
    pad = _F.zeros(grad.shape[0], 1, grad.shape[2], dtype=grad.dtype)
    per_element = _F.cat([grad, pad], 1).gather(1, ids3)
    in_segment = ids3 < grad.shape[1]
    if reduce == "sum":
        return per_element
    shape = (grad.shape[0], grad.shape[1] + 1, grad.shape[2])
    counts = _F.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, _F.ones_like(data3))
    if reduce == "mean":
        return per_element / counts.gather(1, ids3)
    output = _F.cat([result, _F.zeros_like(pad)], 1).gather(1, ids3)
    if reduce in ("max", "min"):
        hit = (_F.isnan(data3) | (data3 == output)) & in_segment
        picked = _F.where(hit, per_element, _F.zeros_like(per_element))
        ties = _F.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, hit.to(grad.dtype)).gather(1, ids3)
        # torch divides among ties only where the gradient is positive.
        return _F.where((ties >= 2) & (picked > 0), picked / ties, picked)
    special = _F.isnan(data3) | (data3 == 0)
    zeros = _F.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, (data3 == 0).to(grad.dtype)).gather(1, ids3)
    nans = _F.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, _F.isnan(data3).to(grad.dtype)).gather(1, ids3)
    others = _F.where(special, _F.ones_like(data3), data3)
    start = _F.full(shape, 1.0 if initial is None else initial, dtype=grad.dtype)
    rest = start.scatter_reduce(1, ids3, others, "prod", include_self=True).gather(1, ids3)
    zeros_left = zeros - (data3 == 0).to(grad.dtype)
    nans_left = nans - _F.isnan(data3).to(grad.dtype)
    rest = rest * _F.where(zeros_left > 0, _F.zeros_like(rest), _F.ones_like(rest))
    rest = rest * _F.where(nans_left > 0, _F.full_like(rest, math.nan), _F.ones_like(rest))
    general = per_element * output / data3
    return _F.where(in_segment, _F.where(special, per_element * rest, general), _F.zeros_like(general))


class SegmentReduceBackward(Function):
    """segment_reduce's forward, with torch's gradient formulas."""

    @staticmethod
    def forward(ctx, data3, ids3, groups, reduce, initial):
        result = _segment_forward(data3, ids3, groups, reduce, initial)
        ctx.save_for_backward(data3, ids3, result)
        ctx.reduce, ctx.initial = reduce, initial
        return result

    @staticmethod
    def backward(ctx, grad):
        data3, ids3, result = ctx.saved_tensors
        return _segment_backward(grad, data3, ids3, result, ctx.reduce, ctx.initial), None, None, None, None


@checked_signature("segment_reduce(Tensor data, str reduce, *, Tensor? lengths, Tensor? indices, Tensor? offsets, "
                   "int axis, bool unsafe, Scalar? initial)")
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """torch.segment_reduce: reduces (``sum``, ``mean``, ``max``/``amax``, ``min``/``amin``,
    ``prod``) consecutive segments of ``data`` along ``axis``, the segments given by ``lengths``
    or ``offsets`` (shaped as data's dims before axis plus one segment dim); empty segments give
    ``initial`` or the reduction's identity (mean: nan). ``initial`` also joins every segment.
    Differentiable in data with torch's formulas (ties share a max/min gradient)."""
    if data.dim() == 0 and axis not in (0, -1):
        raise IndexError(f"Dimension specified as {axis} but tensor has no dimensions")
    n = max(data.dim(), 1)
    if not -n <= axis < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {axis})")
    axis %= n
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = _REDUCTIONS[reduce]
    with no_grad():
        segment_offsets = _segment_offsets(data, axis, lengths, offsets, unsafe)
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{_scalar_name(data.dtype)}'")
    size, groups = data.shape[axis], segment_offsets.shape[1] - 1
    rest = 1
    for s in data.shape[axis + 1:]:
        rest *= s
    data3 = data.reshape(segment_offsets.shape[0], size, rest)
    with no_grad():
        ids3 = _segment_ids(segment_offsets, size).unsqueeze(-1).expand(data3.shape).contiguous()
    result = SegmentReduceBackward.apply(data3, ids3, groups, reduce, initial)
    return result.reshape(tuple(data.shape[:axis]) + (groups,) + tuple(data.shape[axis + 1:]))
