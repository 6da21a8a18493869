"""Conv/Linear + BatchNorm folding for inference, as torch.nn.utils.fusion:
fuse_conv_bn_eval / fuse_conv_bn_weights and fuse_linear_bn_eval /
fuse_linear_bn_weights. The fused weights are new leaf Parameters (same dtype
as the conv's / linear's), the input modules are left untouched."""

from __future__ import annotations

import copy

from kiln import _C
from kiln.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` (eval mode) computing conv followed by ``bn`` (eval mode)."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def _require_tensors(function, required, optional):
    """A TypeError naming the first argument that is not a tensor (or None, for `optional` ones)."""
    for name, value in [*required.items(), *((n, v) for n, v in optional.items() if v is not None)]:
        if not isinstance(value, _C.TensorBase):
            raise TypeError(f"{function}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """(weight, bias) Parameters of the conv that equals conv(conv_w, conv_b) then batch norm."""
    _require_tensors("fuse_conv_bn_weights", {"conv_w": conv_w, "bn_rm": bn_rm, "bn_rv": bn_rv},
                     {"conv_b": conv_b, "bn_w": bn_w, "bn_b": bn_b})
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    if conv_b is None:
        conv_b = _C._functions.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _C._functions.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _C._functions.zeros_like(bn_rm)
    var_rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) computing linear followed by ``bn`` (eval mode)."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused_linear = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, (
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
        f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    assert bn.running_mean is not None and bn.running_var is not None
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear that equals linear(linear_w, linear_b) then batch norm."""
    _require_tensors("fuse_linear_bn_weights", {"linear_w": linear_w, "bn_rm": bn_rm, "bn_rv": bn_rv, "bn_w": bn_w,
                                                "bn_b": bn_b}, {"linear_b": linear_b})
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    if linear_b is None:
        linear_b = _C._functions.zeros_like(bn_rm)
    bn_scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)
