"""The autograd Function behind SyncBatchNorm's training forward: batch norm whose per-channel
statistics cover the batches of every rank in a process group.

Note [SyncBatchNorm's collectives]
Forward: each rank computes, per channel, the mean and biased variance of its own batch and its
count (values per channel, 0 for an empty batch), and one all_gather shares the (mean, var, count)
rows. Every rank combines them the same way (Chan's parallel formula: mean = sum(n_i m_i) / N,
var = sum(n_i (v_i + (m_i - mean)^2)) / N), which is exact for unequal batch sizes and avoids the
cancellation of sum(x^2) - N mean^2. Running stats take the unbiased global variance var N/(N-1),
as torch's batch_norm_gather_stats_with_counts does.
Backward: the input gradient of batch norm over the global batch needs two per-channel sums over
that batch, sum(dy) and sum(dy (x - mean)); each rank sums its own part and one all_reduce adds
them. The weight and bias gradients stay per rank, as torch's (DDP averages them like any other
parameter gradient). Every rank must run forward and backward the same number of times, since
both are collectives.
"""

from __future__ import annotations

from kiln import _C
from kiln.autograd.function import Function
from kiln.distributed import ReduceOp, all_gather, all_reduce

__all__ = ["SyncBatchNormFunction"]


def _channel_dims(x) -> list[int]:
    return [d for d in range(x.dim()) if d != 1]


def _per_channel(t, ndim: int):
    """A (C,) tensor shaped to broadcast against an N-D input of C channels."""
    return t.reshape([1, t.shape[0]] + [1] * (ndim - 2))


def _stats_dtype(dtype):
    return _C.float64 if dtype == _C.float64 else _C.float32


class SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps: float, momentum: float, process_group,
                world_size: int):
        input = input.contiguous()
        channels = input.shape[1]
        stats_dtype = _stats_dtype(input.dtype)
        x = input.to(stats_dtype)
        count = input.numel() // channels if channels else 0
        if count > 0:
            dims = _channel_dims(x)
            local_mean = x.mean(dims)
            local_var = (x - _per_channel(local_mean, x.dim())).square().mean(dims)
        else:
            local_mean = _C._functions.zeros(channels, dtype=stats_dtype)
            local_var = _C._functions.zeros(channels, dtype=stats_dtype)
        counts = _C._functions.full([1], float(count), dtype=stats_dtype)
        row = _C._functions.cat([local_mean, local_var, counts], 0)
        rows = [_C._functions.zeros(row.shape[0], dtype=stats_dtype) for _ in range(world_size)]
        all_gather(rows, row, group=process_group)
        table = _C._functions.stack(rows, 0)  # (world_size, 2C + 1)
        means, variances, rank_counts = table[:, :channels], table[:, channels:2 * channels], table[:, 2 * channels:]
        total = float(rank_counts.sum().item())
        if total <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {int(total)} "
                             f"over the process group")
        mean = (means * rank_counts).sum(0) / total
        var = ((variances + (means - mean.reshape(1, channels)).square()) * rank_counts).sum(0) / total
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
        if running_var is not None:
            unbiased = var * (total / (total - 1))
            running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))
        ndim = x.dim()
        out = (x - _per_channel(mean, ndim)) * _per_channel(invstd, ndim)
        if weight is not None:
            out = out * _per_channel(weight.to(stats_dtype), ndim)
        if bias is not None:
            out = out + _per_channel(bias.to(stats_dtype), ndim)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.input_dtype = input.dtype
        ctx.process_group = process_group
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, mean, invstd = ctx.saved_tensors
        ndim = x.dim()
        dy = grad_output.contiguous().to(x.dtype)
        dims = _channel_dims(x)
        xmu = x - _per_channel(mean, ndim)
        if x.numel() > 0:
            sum_dy = dy.sum(dims)
            sum_dy_xmu = (dy * xmu).sum(dims)
        else:
            sum_dy = _C._functions.zeros(mean.shape[0], dtype=x.dtype)
            sum_dy_xmu = _C._functions.zeros(mean.shape[0], dtype=x.dtype)
        grad_weight = (sum_dy_xmu * invstd).to(weight.dtype) if ctx.needs_input_grad[1] else None
        grad_bias = sum_dy.to(ctx.input_dtype) if ctx.needs_input_grad[2] else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            channels = mean.shape[0]
            combined = _C._functions.cat([sum_dy, sum_dy_xmu], 0)
            all_reduce(combined, ReduceOp.SUM, group=ctx.process_group)
            mean_dy = combined[:channels] / ctx.total
            mean_dy_xmu = combined[channels:] / ctx.total
            scale = invstd if weight is None else invstd * weight.to(x.dtype)
            grad_input = ((dy - _per_channel(mean_dy, ndim)
                           - xmu * _per_channel(invstd.square() * mean_dy_xmu, ndim))
                          * _per_channel(scale, ndim)).to(ctx.input_dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
