"""Outputs of ops torch has no derivative for (histogram, detach_copy, ...): they
require grad when an input does, and backward through them raises torch's error."""

from __future__ import annotations

from kiln import _C
from kiln.autograd.function import Function


def _no_derivative(names, outputs, inputs):
    """outputs marked as depending on inputs through an op without a derivative, as
    torch does for histogram: they require grad, and backward raises torch's error."""
    if not (_C.is_grad_enabled() and any(t is not None and t.requires_grad for t in inputs)):
        return outputs
    results = []
    for name, output in zip(names, outputs):
        class NotImplementedBackward(Function):
            op = name

            @staticmethod
            def forward(ctx, value, *args):
                return value.clone()

            @staticmethod
            def backward(ctx, *grads):
                raise RuntimeError(f"derivative for aten::{NotImplementedBackward.op} is not implemented")

        results.append(NotImplementedBackward.apply(output, *[t for t in inputs if t is not None]))
    return results
