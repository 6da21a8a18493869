"""kiln.nn.grad: torch.nn.grad's convolution gradients, conv{1,2,3}d_input and
conv{1,2,3}d_weight: the gradient of kiln.nn.functional.conv{1,2,3}d with
respect to its input (given the input's size) or its weight (given the
weight's size), for a given ``grad_output``.

Each runs the convolution on a zero tensor of the requested size and asks
kiln.autograd.grad for the vector-Jacobian product with ``grad_output``; the
convolution is linear in the argument differentiated, so the zeros do not
matter. As in torch, the result is itself differentiable (with respect to the
weight or input and grad_output) when those require grad, and a grad_output
whose shape is not the convolution's output raises RuntimeError in torch's
words (torch lets a grad_output of another batch size through conv*_input
unchecked; kiln refuses it too).
"""

from __future__ import annotations
import kiln
from kiln.autograd import grad
from kiln.autograd.grad_mode import enable_grad
from kiln.nn import functional

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _check_grad_output(output, grad_output) -> None:
    """torch's shape check: grad_output must have the shape the convolution produces. torch runs a
    1-d convolution as a 2-d one over an inserted dim 2, and its message counts dims that way."""
    expected, got = tuple(output.shape), tuple(grad_output.shape)
    if expected == got:
        return
    if len(expected) != len(got):
        raise RuntimeError(f"Expected input and grad_output to have the same number of dimensions, but got: "
                           f"{len(expected)} and {len(got)}")
    as_2d = len(expected) == 3
    for dim in range(len(expected)):
        if got[dim] != expected[dim]:
            shown, rank = (dim + 1 if as_2d and dim >= 2 else dim), len(expected) + as_2d
            raise RuntimeError(f"Expected a tensor of dimension {rank} and tensor.size[{shown}] == {expected[dim]} "
                               f"but got: dimension {rank} and tensor.size[{shown}] = {got[dim]}")


def _conv_grad(conv, input, weight, grad_output, wrt_input: bool, stride, padding, dilation, groups):
    """The gradient of ``conv(input, weight)`` with respect to input (wrt_input) or weight; the other
    one of the two is a zero tensor of the given size."""
    template = weight if wrt_input else input
    size = tuple(input if wrt_input else weight)
    zeros = kiln.zeros(size, dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
    create_graph = bool(grad_output.requires_grad or template.requires_grad)
    with enable_grad():
        output = conv(zeros, template, None, stride, padding, dilation, groups) if wrt_input else \
            conv(template, zeros, None, stride, padding, dilation, groups)
        _check_grad_output(output, grad_output)
        return grad(output, zeros, grad_output, create_graph=create_graph)[0]


def _functional():
    return functional


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its input, of shape ``input_size`` (a transposed convolution)."""
    return _conv_grad(_functional().conv1d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its weight, of shape ``weight_size``."""
    return _conv_grad(_functional().conv1d, input, weight_size, grad_output, False, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input, of shape ``input_size`` (a transposed convolution)."""
    return _conv_grad(_functional().conv2d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight, of shape ``weight_size``."""
    return _conv_grad(_functional().conv2d, input, weight_size, grad_output, False, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its input, of shape ``input_size`` (a transposed convolution)."""
    return _conv_grad(_functional().conv3d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its weight, of shape ``weight_size``."""
    return _conv_grad(_functional().conv3d, input, weight_size, grad_output, False, stride, padding, dilation, groups)
