"""CrossMapLRN2d: torch's legacy (Lua-torch) cross-channel local response norm.

It is not F.local_response_norm: torch computes each channel's sum of squares
with a running window whose update never drops channel 0 once the window has
passed it, and its backward is a hand-written formula (for the symmetric window)
rather than the gradient of that forward. kiln reproduces both, so values and
gradients match torch's: the forward window and the backward window are 0/1
matrices over the channels (built from torch's index rules), applied with one
matmul each. size=1 fails in backward, with torch's RuntimeError."""

from __future__ import annotations

import numpy as np

from kiln import _C
from kiln._creation import tensor as _tensor
from kiln.autograd.function import Function
from kiln.nn.modules.module import Module

__all__ = ["CrossMapLRN2d"]


def _forward_window(channels: int, size: int) -> np.ndarray:
    """counts[c, j]: how often channel j's square enters channel c's sum (torch's running update)."""
    pre_pad = int((size - 1) / 2 + 1)
    counts = np.zeros((channels, channels))
    current = np.zeros(channels)
    current[:min(pre_pad, channels)] = 1
    counts[0] = current
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            current[c + pre_pad - 1] += 1
        if c > pre_pad:
            current[c - pre_pad] -= 1
        counts[c] = current
    return counts


def _backward_window(channels: int, size: int) -> np.ndarray:
    """ones[c, j] for the ratios channel c's gradient sums (torch's padded accumulation)."""
    offset = int(size - (size - 1) / 2)
    if offset + channels > channels + size - 1:
        raise RuntimeError(f"start ({offset}) + length ({channels}) exceeds dimension size ({channels + size - 1}).")
    ones = np.zeros((channels, channels))
    for c in range(channels):
        lo, hi = max(0, c - offset), min(channels - 1, c + size - 1 - offset)
        if lo <= hi:
            ones[c, lo:hi + 1] = 1
    return ones


def _over_channels(matrix: np.ndarray, x):
    """sum_j matrix[c, j] * x[:, j] for x of shape [N, C, H, W]."""
    n, c, h, w = x.shape
    m = _tensor(matrix.tolist(), dtype=x.dtype) if c else _C._functions.zeros((0, 0), dtype=x.dtype)
    return m.matmul(x.reshape(n, c, h * w)).reshape(n, c, h, w)


class _CrossMapLRN2dFunction(Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        scale = _over_channels(_forward_window(input.shape[1], size), input * input) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        ratio = grad_output * output / scale
        accum = _over_channels(_backward_window(input.shape[1], ctx.size), ratio)
        grad_input = scale.pow(-ctx.beta) * grad_output - input * accum * (2 * ctx.alpha * ctx.beta / ctx.size)
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """``CrossMapLRN2d(size, alpha=1e-4, beta=0.75, k=1)`` on [N, C, H, W] inputs."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
