"""Converters: convolution and transposed convolution, pooling, batch/layer/
group/RMS norms (inference form), softmax, scaled dot-product attention, losses."""

from __future__ import annotations

import math

import numpy as np

from kiln.onnx.errors import UnsupportedOperatorError
from kiln.onnx._operands import dim, operand, reduce, unsqueeze
from kiln.onnx._registry import converts
from kiln.onnx._symbolic import SymInt

_NEG_INF = float("-inf")


def _pair(v, n=2):
    return list(v) * n if len(v) == 1 else list(v)


@converts("kiln::_convolution2d", "kiln::conv2d", "kiln::conv1d",
          args="input weight bias stride padding dilation groups")
def _conv(cx, a):
    if isinstance(a.value("padding"), str):
        raise UnsupportedOperatorError("kiln.onnx.export: convolution with padding given as a string is not supported")
    n = a.rank("input") - 2
    pads = _pair(a.static_ints("padding"), n)
    inputs = [a.tensor("input"), a.tensor("weight")]
    if a.optional_tensor("bias") is not None:
        inputs.append(a.tensor("bias"))
    return cx.b.op("Conv", inputs, strides=_pair(a.static_ints("stride"), n), pads=pads + pads,
                   dilations=_pair(a.static_ints("dilation"), n), group=a.int("groups"))


@converts("kiln::_conv2d_backward_input", args="grad_output weight input_sizes stride padding dilation groups")
def _conv_transpose(cx, a):
    """A transposed convolution as captured: the input-gradient of the convolution it reverses."""
    sizes_in = a.sizes("grad_output")
    kernel = a.sizes("weight")[2:]
    stride, padding, dilation = a.static_ints("stride"), a.static_ints("padding"), a.static_ints("dilation")
    out_sizes = a.ints("input_sizes")[2:]
    if any(isinstance(s, SymInt) for s in out_sizes) or any(not isinstance(s, int) for s in sizes_in[2:]):
        raise UnsupportedOperatorError("kiln.onnx.export: a transposed convolution whose spatial sizes are dynamic "
                                       "is not supported")
    output_padding = [out_sizes[i] - ((sizes_in[2 + i] - 1) * stride[i] - 2 * padding[i]
                                      + dilation[i] * (kernel[i] - 1) + 1) for i in range(len(out_sizes))]
    return cx.b.op("ConvTranspose", [a.tensor("grad_output"), a.tensor("weight")], strides=stride,
                   pads=padding + padding, dilations=dilation, group=a.int("groups"),
                   output_padding=output_padding if any(output_padding) else None)


def _pool_attrs(a, n):
    kernel = _pair(a.static_ints("kernel_size"), n)
    stride = a.static_ints("stride")
    stride = kernel if not stride else _pair(stride, n)
    pads = _pair(a.static_ints("padding"), n)
    return kernel, stride, pads + pads


@converts("kiln::max_pool2d_with_indices", "kiln::_max_pool2d_without_indices", "kiln::max_pool2d",
          "kiln::max_pool1d", "kiln::max_pool1d_with_indices",
          args="self kernel_size stride padding dilation ceil_mode")
def _max_pool(cx, a):
    n = a.rank("self") - 2
    kernel, stride, pads = _pool_attrs(a, n)
    y = cx.b.op("MaxPool", [a.tensor("self")], kernel_shape=kernel, strides=stride, pads=pads,
                dilations=_pair(a.static_ints("dilation"), n), ceil_mode=1 if a.value("ceil_mode") else 0)
    # The indices output has no ONNX equal (ONNX flattens over the whole tensor); a use of it fails to resolve.
    return [y, None] if a.node.kind.endswith("with_indices") else y


@converts("kiln::avg_pool2d", "kiln::avg_pool1d",
          args="self kernel_size stride padding ceil_mode count_include_pad divisor_override")
def _avg_pool(cx, a):
    if a.value("divisor_override") is not None:
        raise UnsupportedOperatorError("kiln.onnx.export: avg_pool2d with divisor_override has no ONNX form")
    n = a.rank("self") - 2
    kernel, stride, pads = _pool_attrs(a, n)
    return cx.b.op("AveragePool", [a.tensor("self")], kernel_shape=kernel, strides=stride, pads=pads,
                   ceil_mode=1 if a.value("ceil_mode") else 0,
                   count_include_pad=1 if a.value("count_include_pad", True) else 0)


def _adaptive(global_op, pool_op):
    def convert(cx, a):
        sizes = a.sizes("self")
        spatial = sizes[2:]
        out = a.ints("output_size")
        out = out * len(spatial) if len(out) == 1 else out
        out = [spatial[i] if o is None else o for i, o in enumerate(out)]
        if all(o == 1 for o in out):
            return cx.b.op(global_op, [a.tensor("self")])
        if any(not isinstance(s, int) for s in spatial):
            raise UnsupportedOperatorError(f"kiln.onnx.export: {a.node.kind} to {out} over dynamic spatial sizes "
                                           "(ONNX has no adaptive pooling; only a 1x1 output is global pooling)")
        if any(s % o for s, o in zip(spatial, out)):
            raise UnsupportedOperatorError(f"kiln.onnx.export: {a.node.kind}: output size {out} does not divide the "
                                           f"input's {list(spatial)}; ONNX has no adaptive pooling")
        kernel = [s // o for s, o in zip(spatial, out)]
        y = cx.b.op(pool_op, [a.tensor("self")], kernel_shape=kernel, strides=kernel)
        return [y, None] if a.node.kind.endswith("max_pool2d") else y
    return convert


converts("kiln::adaptive_avg_pool2d", "kiln::_adaptive_avg_pool2d", "kiln::adaptive_avg_pool1d",
         args="self output_size")(_adaptive("GlobalAveragePool", "AveragePool"))
converts("kiln::adaptive_max_pool2d", args="self output_size")(_adaptive("GlobalMaxPool", "MaxPool"))


# --- norms ----------------------------------------------------------------------------------------------------
def _channel_param(cx, a, name, channels, fill):
    t = a.optional_tensor(name)
    if t is not None:
        return t
    if not isinstance(channels, int):
        raise UnsupportedOperatorError(f"kiln.onnx.export: {a.node.kind} without {name} over a channel count that "
                                       "is not static")
    return cx.b.constant(np.full((channels,), fill), a.out_dtype())


@converts("kiln::native_batch_norm", "kiln::batch_norm", "kiln::_native_batch_norm_legit_no_training",
          args="input weight bias running_mean running_var training momentum eps")
def _batch_norm(cx, a):
    channels = a.sizes("input")[1]
    if a.value("training"):
        if a.optional_tensor("running_mean") is not None:
            raise UnsupportedOperatorError("kiln.onnx.export: batch_norm in training mode updates its running "
                                           "statistics; export in eval mode (model.eval(), or "
                                           "training=TrainingMode.EVAL)")
        y = _batch_statistics_norm(cx, a, channels)
        return [y, None, None] if a.node.kind.startswith("kiln::native") else y
    y = cx.b.op("BatchNormalization", [a.tensor("input"), _channel_param(cx, a, "weight", channels, 1.0),
                                       _channel_param(cx, a, "bias", channels, 0.0), a.tensor("running_mean"),
                                       a.tensor("running_var")], epsilon=float(a.value("eps")))
    return [y, None, None] if a.node.kind.startswith("kiln::native") else y


def _batch_statistics_norm(cx, a, channels):
    """Normalization by the batch's own statistics (no running statistics: instance_norm, or BatchNorm with
    track_running_stats=False): (x - mean) / sqrt(biased var + eps) over every axis but the channels."""
    t = a.out_dtype()
    x = a.tensor("input")
    rank = a.rank("input")
    axes = [0] + list(range(2, rank))
    mean = reduce(cx, "ReduceMean", x, axes, True)
    centered = cx.b.op("Sub", [x, mean])
    var = reduce(cx, "ReduceMean", cx.b.op("Mul", [centered, centered]), axes, True)
    root = cx.b.op("Sqrt", [cx.b.op("Add", [var, cx.b.constant(float(a.value("eps")), t)])])
    y = cx.b.op("Div", [centered, root])
    trailing = list(range(1, rank - 1))
    for name, combine in (("weight", "Mul"), ("bias", "Add")):
        p = a.optional_tensor(name)
        if p is not None:
            y = cx.b.op(combine, [y, unsqueeze(cx, p, trailing) if trailing else p])
    return y


@converts("kiln::native_layer_norm", "kiln::layer_norm", args="input normalized_shape weight bias eps")
def _layer_norm(cx, a):
    shape = a.static_ints("normalized_shape")
    t = a.out_dtype()
    scale = a.optional_tensor("weight") or cx.b.constant(np.ones(shape), t)
    bias = a.optional_tensor("bias") or cx.b.constant(np.zeros(shape), t)
    y = cx.b.op("LayerNormalization", [a.tensor("input"), scale, bias], axis=-len(shape),
                epsilon=float(a.value("eps", 1e-5)))
    return [y, None, None] if a.node.kind == "kiln::native_layer_norm" else y


@converts("kiln::native_group_norm", args="input weight bias N C HxW group eps")
def _native_group_norm(cx, a):
    return [_group_norm_of(cx, a, a.int("group")), None, None]


@converts("kiln::group_norm", args="input num_groups weight bias eps cudnn_enabled")
def _group_norm(cx, a):
    return _group_norm_of(cx, a, a.int("num_groups"))


def _group_norm_of(cx, a, groups: int):
    """Instance normalization of the input seen as [N, groups, -1], then the per-channel affine."""
    x = a.tensor("input")
    t = a.out_dtype()
    rank = a.rank("input")
    grouped = cx.b.op("Reshape", [x, cx.b.ints([0, groups, -1])])
    normed = cx.b.op("InstanceNormalization", [grouped, cx.b.constant(np.ones(groups), t),
                                               cx.b.constant(np.zeros(groups), t)], epsilon=float(a.value("eps")))
    y = cx.b.op("Reshape", [normed, cx.b.op("Shape", [x])])
    trailing = list(range(1, rank - 1))
    if a.optional_tensor("weight") is not None:
        y = cx.b.op("Mul", [y, unsqueeze(cx, a.tensor("weight"), trailing) if trailing else a.tensor("weight")])
    if a.optional_tensor("bias") is not None:
        y = cx.b.op("Add", [y, unsqueeze(cx, a.tensor("bias"), trailing) if trailing else a.tensor("bias")])
    return y


@converts("kiln::rms_norm", "kiln::_fused_rms_norm", args="input normalized_shape weight eps")
def _rms_norm(cx, a):
    t = a.out_dtype()
    x = a.tensor("input")
    n = len(a.static_ints("normalized_shape"))
    eps = a.value("eps")
    if eps is None:
        eps = float(np.finfo(np.float64 if t == "float64" else np.float32).eps)
    rank = a.rank("input")
    mean_sq = reduce(cx, "ReduceMean", cx.b.op("Mul", [x, x]), list(range(rank - n, rank)), True)
    root = cx.b.op("Sqrt", [cx.b.op("Add", [mean_sq, cx.b.constant(eps, t)])])
    y = cx.b.op("Mul", [x, cx.b.op("Reciprocal", [root])])
    if a.optional_tensor("weight") is not None:
        y = cx.b.op("Mul", [y, a.tensor("weight")])
    return [y, None] if a.node.kind == "kiln::_fused_rms_norm" else y


# --- softmax -------------------------------------------------------------------------------------------------
def _softmax(op_type):
    def convert(cx, a):
        x = operand(cx, a, "self", a.out_dtype())
        return cx.b.op(op_type, [x], axis=dim(a.value("dim"), a.rank("self")))
    return convert


converts("kiln::softmax.int", "kiln::_softmax", args="self dim dtype")(_softmax("Softmax"))
converts("kiln::log_softmax.int", "kiln::_log_softmax", args="self dim dtype")(_softmax("LogSoftmax"))


# --- attention ------------------------------------------------------------------------------------------------
def _shape_dim(cx, x: str, axis: int) -> str:
    return cx.b.op("Shape", [x], start=axis, end=axis + 1)


def _attention(cx, a):
    """softmax(q k^T * scale + mask) v, with the causal mask built from the run-time sequence lengths."""
    if a.value("dropout_p", 0.0):
        raise UnsupportedOperatorError("kiln.onnx.export: scaled_dot_product_attention with dropout_p > 0 is not "
                                       "deterministic")
    t = a.out_dtype()
    q, k, v = a.tensor("query"), a.tensor("key"), a.tensor("value")
    rank = a.rank("query")
    scale = a.value("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(a.sizes("query")[-1])
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = cx.b.op("MatMul", [q, cx.b.op("Transpose", [k], perm=perm)])
    scores = cx.b.op("Mul", [scores, cx.b.constant(scale, t)])
    if a.value("is_causal"):
        lengths = cx.b.op("Concat", [_shape_dim(cx, q, rank - 2), _shape_dim(cx, k, rank - 2)], axis=0)
        ones = cx.b.op("Expand", [cx.b.constant(1.0, "float32"), lengths])
        keep = cx.b.op("Cast", [cx.b.op("Trilu", [ones], upper=0)], to=9)  # 9: BOOL
        scores = cx.b.op("Where", [keep, scores, cx.b.constant(_NEG_INF, t)])
    mask = a.optional_tensor("attn_mask")
    if mask is not None:
        if a.dtype("attn_mask") == "bool":
            scores = cx.b.op("Where", [mask, scores, cx.b.constant(_NEG_INF, t)])
        else:
            scores = cx.b.op("Add", [scores, cx.b.cast(mask, a.dtype("attn_mask"), t)])
    weights = cx.b.op("Softmax", [scores], axis=-1)
    return cx.b.op("MatMul", [weights, v])


converts("kiln::_scaled_dot_product_flash_attention_for_cpu",
         args="query key value dropout_p is_causal attn_mask scale")(lambda cx, a: [_attention(cx, a), None])
converts("kiln::scaled_dot_product_attention",
         args="query key value attn_mask dropout_p is_causal scale enable_gqa")(_attention)


# --- losses ---------------------------------------------------------------------------------------------------
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


@converts("kiln::nll_loss_forward", "kiln::nll_loss", args="self target weight reduction ignore_index")
def _nll_loss(cx, a):
    inputs = [a.tensor("self"), a.tensor("target")]
    if a.optional_tensor("weight") is not None:
        inputs.append(a.tensor("weight"))
    y = cx.b.op("NegativeLogLikelihoodLoss", inputs, reduction=_REDUCTIONS[a.int("reduction", 1)],
                ignore_index=a.int("ignore_index", -100))
    return [y, None] if a.node.kind == "kiln::nll_loss_forward" else y


@converts("kiln::cross_entropy_loss", args="self target weight reduction ignore_index label_smoothing")
def _cross_entropy(cx, a):
    if a.value("label_smoothing", 0.0):
        raise UnsupportedOperatorError("kiln.onnx.export: cross_entropy with label_smoothing is not supported")
    if a.dtype("target") not in ("int64", "int32"):
        raise UnsupportedOperatorError("kiln.onnx.export: cross_entropy with class probabilities is not supported")
    inputs = [a.tensor("self"), a.tensor("target")]
    if a.optional_tensor("weight") is not None:
        inputs.append(a.tensor("weight"))
    return cx.b.op("SoftmaxCrossEntropyLoss", inputs, reduction=_REDUCTIONS[a.int("reduction", 1)],
                   ignore_index=a.int("ignore_index", -100))
