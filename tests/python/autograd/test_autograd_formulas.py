"""Derivative formulas of every op family, one table of cases: each case's
gradients (w.r.t. every floating input, through a weighted sum of every output)
are compared with torch's on the same inputs, and checked against finite
differences with kiln.autograd.gradcheck in float64. The formulas of backward
ops (tanh_backward, _conv2d_backward_input, ...) are reached by a case that
differentiates a gradient taken with create_graph=True (`_grad_of`).

`test_every_generated_formula_has_a_case` keeps the table honest, one test per
family file: an op of the family whose formula kiln generates must have a case
here (or a reason in NOT_HERE); the failure names the missing ops.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln

# Each case: (ops it covers, input shapes, fn(lib, *inputs)). Inputs are float64
# leaves built identically for both libraries; extra non-differentiable
# operands are made inside fn with lib.tensor.
CASES = {
    "add": (["add.Tensor", "add.Scalar"], [(3, 4), (4,)], lambda L, a, b: L.add(a, b, alpha=2) + 3),
    "sub": (["sub.Tensor", "sub.Scalar"], [(3, 4), (3, 1)], lambda L, a, b: L.sub(a, b, alpha=0.5) - 1),
    "div": (["div.Tensor", "true_divide.Tensor"], [(2, 3), (3,)],
            lambda L, a, b: [L.div(a, b.clamp_min(0.5) + 1), L.true_divide(a, b.clamp_max(-0.5) - 1)]),
    "div modes": (["div.Tensor_mode"], [(2, 3), (2, 3)],
                  lambda L, a, b: [L.div(a, b.clamp_min(0.5) + 1), L.div(a * 3, b.clamp_min(0.5) + 1, rounding_mode="floor"),
                                   L.div(a * 3, b.clamp_min(0.5) + 1, rounding_mode="trunc")]),
    "rsub": (["rsub.Tensor", "rsub.Scalar"], [(3,), (3,)], lambda L, a, b: L.rsub(a, b, alpha=2) + L.rsub(a, 2)),
    "remainder": (["remainder.Tensor"], [(6,), (6,)], lambda L, a, b: L.remainder(a * 3, b.clamp_min(0.5) + 1)),
    "fmod": (["fmod.Tensor"], [(6,), (6,)], lambda L, a, b: L.fmod(a * 3, b.clamp_min(0.5) + 1)),
    "pow tensor exponent": (["pow.Tensor_Tensor"], [(4,), (4,)], lambda L, a, b: (a.clamp_min(0.1) + 1).pow(b)),
    "pow scalar base": (["pow.Scalar"], [(4,)], lambda L, a: L.pow(2.5, a)),
    "addcdiv": (["addcdiv"], [(3,), (3,), (3,)], lambda L, a, b, c: L.addcdiv(a, b, c.clamp_min(0.5) + 1, value=2)),
    "mul": (["mul.Tensor", "mul.Scalar"], [(2, 3), (2, 3)], lambda L, a, b: a * b * 1.5),
    "pow scalar exponent": (["pow.Tensor_Scalar"], [(4,)], lambda L, a: a.pow(3) + a.pow(0) + a.pow(1)),
    "maximum": (["maximum", "fmax"], [(5,), (5,)], lambda L, a, b: L.maximum(a, b) + L.fmax(a, b * 2)),
    "minimum": (["minimum", "fmin"], [(5,), (5,)], lambda L, a, b: L.minimum(a, b) + L.fmin(a, b * 2)),
    "where": (["where.self", "where.ScalarOther", "where.ScalarSelf"], [(4,), (4,)],
              lambda L, a, b: L.where(a > 0, a, b) + L.where(a > 0, a, 1.0) + L.where(b > 0, 2.0, b)),
    "clamp": (["clamp", "clamp_min", "clamp_max"], [(6,)],
              lambda L, a: a.clamp(-0.3, 0.4) + a.clamp_min(0.1) + a.clamp_max(-0.1) + a.clamp(min=0.2)),
    "clamp tensor bounds": (["clamp.Tensor", "clamp_min.Tensor", "clamp_max.Tensor"], [(4, 5), (5,), (4, 1)],
                            lambda L, a, lo, hi: a.clamp(lo, hi) + a.clamp_min(lo) + a.clamp_max(hi)
                            + a.clamp(min=lo)),
    "lerp": (["lerp.Scalar", "lerp.Tensor"], [(4,), (4,), (4,)],
             lambda L, a, b, w: a.lerp(b, 0.3) + a.lerp(b, w)),
    "addcmul": (["addcmul"], [(3,), (3,), (3,)], lambda L, a, b, c: L.addcmul(a, b, c, value=0.5)),
    "masked_fill": (["masked_fill.Scalar", "masked_fill.Tensor"], [(2, 3), ()],
                    lambda L, a, v: a.masked_fill(a > 0, 2.0) + a.masked_fill(a < 0, v)),
    # shape ops
    "views": (["view", "transpose.int", "t", "permute", "unsqueeze", "squeeze", "squeeze.dim", "squeeze.dims",
               "expand"],
              [(2, 1, 3)], lambda L, a: [a.view(3, 2), a.transpose(0, 2), a.squeeze().t(), a.permute(2, 0, 1),
                                          a.unsqueeze(0), a.squeeze(1), a.squeeze((0, 1)), a.expand(4, 2, 5, 3)]),
    "as_strided": (["as_strided"], [(4, 4)],
                   lambda L, a: [L.as_strided(a, (3, 3), (1, 1), 2), L.as_strided(a, (2, 4), (0, 1), 4),
                                 a.t().as_strided((2, 2), (4, 1))]),
    "select and slice": (["select.int", "slice.Tensor"], [(4, 5)], lambda L, a: [a[1], a[:, 1:4:2], a[-1, ::3]]),
    "cat": (["cat"], [(2, 3), (2, 4), (2, 1)], lambda L, a, b, c: L.cat([a, b, c], -1)),
    "stack": (["stack"], [(2, 3), (2, 3)], lambda L, a, b: L.stack([a, b], 1)),
    "split": (["split.Tensor", "split_with_sizes"], [(5, 3)],
              lambda L, a: list(a.split(2)) + list(a.split([1, 4], 0))[1:]),
    "chunk and unbind": (["unbind.int"], [(3, 4)], lambda L, a: list(a.chunk(2, 1)) + list(a.unbind(0))[:2]),
    "repeat": (["repeat"], [(2, 3)], lambda L, a: a.repeat(2, 1, 3)),
    "repeat_interleave": (["repeat_interleave.self_Tensor", "repeat_interleave.self_int"], [(3, 2)],
                          lambda L, a: [a.repeat_interleave(L.tensor([1, 0, 2]), dim=0), a.repeat_interleave(2)]),
    "diagonal": (["diagonal", "diag_embed"], [(3, 4)],
                 lambda L, a: [a.diagonal(1), a.diagonal(-1, 1, 0), L.diag_embed(a, 1)]),
    "flip and roll": (["flip", "roll"], [(3, 4)], lambda L, a: [a.flip(0, 1), a.roll(2, 1), a.roll((1, -1), (0, 1))]),
    "tril and triu": (["tril", "triu"], [(4, 4)], lambda L, a: [a.tril(-1), a.triu(1)]),
    "clone": (["clone"], [(3,)], lambda L, a: a.clone()),
    # indexing
    "index": (["index.Tensor"], [(3, 4)],
              lambda L, a: [a[L.tensor([0, 2, 0])], a[:, L.tensor([1, 1])], a[a > 0]]),
    "index_put": (["index_put"], [(4, 3), (2, 3)],
                  lambda L, a, v: [L.index_put(a, (L.tensor([1, 3]),), v),
                                   L.index_put(a, (L.tensor([1, 1]),), v, accumulate=True)]),
    "index_select": (["index_select"], [(4, 3)], lambda L, a: a.index_select(0, L.tensor([3, 0, 3]))),
    "take": (["take"], [(2, 3)], lambda L, a: L.take(a, L.tensor([0, 5, 5, -1]))),
    "index_add": (["index_add"], [(4, 3), (2, 3)], lambda L, a, s: a.index_add(0, L.tensor([1, 1]), s, alpha=2)),
    "index_fill": (["index_fill.int_Scalar", "index_fill.int_Tensor"], [(4, 3)],
                   lambda L, a: [a.index_fill(1, L.tensor([0, 2]), 5.0),
                                 a.index_fill(0, L.tensor([1]), L.tensor(2.0, dtype=L.float64))]),
    "gather": (["gather"], [(3, 4)], lambda L, a: a.gather(1, L.tensor([[0, 0], [3, 1], [2, 2]]))),
    "scatter": (["scatter.src", "scatter.value"], [(3, 4), (3, 2)],
                lambda L, a, s: [a.scatter(1, L.tensor([[0, 1], [3, 2], [1, 0]]), s),
                                 a.scatter(1, L.tensor([[0], [3], [1]]), 7.0)]),
    "scatter_reduce": (["scatter_reduce.two"], [(3, 4), (3, 2)],
                       lambda L, a, s: [a.scatter_reduce(1, L.tensor([[0, 0], [3, 2], [1, 1]]), s, reduce,
                                                         include_self=inc)
                                        for reduce in ("sum", "prod", "mean", "amax", "amin")
                                        for inc in (True, False)]),
    "scatter_add": (["scatter_add"], [(3, 4), (3, 2)],
                    lambda L, a, s: a.scatter_add(1, L.tensor([[0, 0], [3, 2], [1, 1]]), s)),
    "masked_select": (["masked_select"], [(2, 3)], lambda L, a: a.masked_select(a > 0)),
    "masked_scatter": (["masked_scatter"], [(2, 3), (5,)],
                       lambda L, a, s: a.masked_scatter(L.tensor([[True, False, True], [False, True, False]]), s)),
    # linear algebra
    "mm": (["mm"], [(2, 3), (3, 4)], lambda L, a, b: L.mm(a, b)),
    "bmm": (["bmm"], [(2, 2, 3), (2, 3, 4)], lambda L, a, b: L.bmm(a, b)),
    "addmm": (["addmm"], [(4,), (2, 3), (3, 4)], lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2)),
    "matmul": ([], [(2, 3, 4), (4, 5)], lambda L, a, b: L.matmul(a, b)),
    "dot mv outer": (["dot", "mv", "outer"], [(3,), (2, 3), (2,)],
                     lambda L, v, m, w: [L.dot(v, v * 2), L.mv(m, v), L.outer(w, v), L.matmul(w, m)]),
    "matmul broadcast": ([], [(2, 1, 3, 4), (3, 4, 5), (4,)],
                         lambda L, a, b, v: [L.matmul(a, b), L.matmul(v, b), L.matmul(a, v),
                                             L.matmul(b.transpose(-1, -2), a.transpose(-1, -2))]),
    "linear": ([], [(5, 3), (2, 3), (2,)], lambda L, x, w, b: (L.linear if L is kiln else L.nn.functional.linear)(x, w, b)),
    "baddbmm and addbmm": ([], [(3, 1), (4, 3, 2), (4, 2, 5)],
                           lambda L, s, a, b: [L.baddbmm(s, a, b, beta=0.5, alpha=2), L.addbmm(s, a, b, alpha=-1)]),
    "scalar operands": (["sub.Scalar", "div.Scalar", "div.Scalar_mode", "true_divide.Scalar", "remainder.Scalar",
                         "fmod.Scalar"], [(5,)],
                        lambda L, a: [a - 2, a / 3, L.div(a, 2.0, rounding_mode="floor"), L.true_divide(a, -4),
                                      L.remainder(a, 0.7), L.fmod(a, 0.7)]),
    # reductions and scans
    "sum and mean": (["sum", "sum.dim_IntList", "mean", "mean.dim"], [(3, 4, 2)],
                     lambda L, a: [a.sum(), a.sum((0, 2)), L.sum(a, -1, keepdim=True), a.mean(), a.mean(1),
                                   L.mean(a, (0, 1), keepdim=True)]),
    "prod": (["prod", "prod.dim_int"], [(3, 4)], lambda L, a: [a.prod(), a.prod(1), L.prod(a, 0, keepdim=True)]),
    "extremes": (["amax", "amin", "max", "min", "max.dim", "min.dim", "aminmax"], [(3, 5)],
                 lambda L, a: [a.amax(1), L.amin(a, (0, 1)), a.max(), a.min(), a.max(0)[0], L.min(a, 1, True)[0],
                               *L.aminmax(a, dim=0), *L.aminmax(a)]),
    "var": (["var.correction"], [(4, 3)],
            lambda L, a: [a.var(), a.var(0), L.var(a, 1, correction=0, keepdim=True)]),
    "scans": (["cumsum", "cumprod"], [(3, 4)], lambda L, a: [a.cumsum(1), L.cumsum(a, 0), a.cumprod(1)]),
    "vector norm": (["linalg_vector_norm"], [(3, 4)],
                    lambda L, a: [L.linalg.vector_norm(a), L.linalg.vector_norm(a, 1, 1),
                                  L.linalg.vector_norm(a, 3, 0, keepdim=True),
                                  L.linalg.vector_norm(a, float("inf"), 1), L.linalg.vector_norm(a, -float("inf"))]),
}


def _F(L):
    return L.nn.functional


def _grad_of(L, f, x, seed):
    """d f(x) / dx seeded with `seed`, kept differentiable: its gradient runs
    the formula of the backward op f's derivative calls."""
    return L.autograd.grad(f(x), x, seed, create_graph=True)[0]


def _pos(a):
    return a.abs() + 0.5


def _fixed(L, shape):
    """A leaf that is not one of the case's inputs (its gradient is not compared)."""
    values = np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) * 1.7).reshape(shape)
    return L.tensor(values, dtype=L.float64, requires_grad=True)


UNARY = {
    "neg abs sign": (["neg", "abs", "sign", "sgn"], [(6,)], lambda L, a: [-a, a.abs(), a.sign() * a, a.sgn() + a]),
    "reciprocal sqrt rsqrt square": (["reciprocal", "sqrt", "rsqrt", "square"], [(6,)],
                                     lambda L, a: [_pos(a).reciprocal(), _pos(a).sqrt(), _pos(a).rsqrt(), a.square()]),
    "exp family": (["exp", "exp2", "expm1"], [(6,)], lambda L, a: [a.exp(), L.exp2(a), a.expm1()]),
    "log family": (["log", "log2", "log10", "log1p"], [(6,)],
                   lambda L, a: [_pos(a).log(), _pos(a).log2(), _pos(a).log10(), _pos(a).log1p()]),
    "trig": (["sin", "cos", "tan"], [(6,)], lambda L, a: [a.sin(), a.cos(), (a * 0.5).tan()]),
    "inverse trig": (["asin", "acos", "atan"], [(6,)], lambda L, a: [(a * 0.4).asin(), (a * 0.4).acos(), a.atan()]),
    "hyperbolic": (["sinh", "cosh", "tanh", "asinh", "acosh", "atanh"], [(6,)],
                   lambda L, a: [a.sinh(), a.cosh(), a.tanh(), a.asinh(), (_pos(a) + 1).acosh(), (a * 0.4).atanh()]),
    "sigmoid and erf": (["sigmoid", "erf", "erfc", "erfinv"], [(6,)],
                        lambda L, a: [a.sigmoid(), a.erf(), a.erfc(), (a * 0.4).erfinv()]),
    "rounding": (["floor", "ceil", "round", "round.decimals", "trunc", "frac"], [(6,)],
                 lambda L, a: [a.floor() * a, a.ceil() + a, a.round() * a, L.round(a, decimals=1) * a, a.trunc() + a,
                               a.frac()]),
    "nan_to_num": (["nan_to_num"], [(6,)], lambda L, a: L.nan_to_num(a * 2, nan=0.0, posinf=1.0)),
    "logit": (["logit"], [(6,)], lambda L, a: [(a * 0.2 + 0.5).logit(), L.logit(a * 0.3 + 0.5, eps=0.2)]),
}

ACTIVATION = {
    "relu threshold hardtanh": (["relu", "threshold", "hardtanh"], [(8,)],
                                lambda L, a: [_F(L).relu(a), _F(L).threshold(a, 0.5, -1.0), _F(L).hardtanh(a, -1.2, 0.7)]),
    "smooth activations": (["gelu", "silu", "mish", "softplus"], [(8,)],
                           lambda L, a: [_F(L).gelu(a), _F(L).gelu(a, approximate="tanh"), _F(L).silu(a),
                                         _F(L).mish(a), _F(L).softplus(a), _F(L).softplus(a, beta=2, threshold=1.0)]),
    "piecewise activations": (["leaky_relu", "elu", "hardsigmoid", "hardswish"], [(8,)],
                              lambda L, a: [_F(L).leaky_relu(a, 0.2), _F(L).elu(a, 0.7), _F(L).hardsigmoid(a * 2),
                                            _F(L).hardswish(a * 2)]),
    # their backward ops, through a gradient of the gradient
    "backward of relu threshold hardtanh": (["threshold_backward", "hardtanh_backward"], [(8,), (8,)],
                                            lambda L, a, g: [_grad_of(L, _F(L).relu, a, g),
                                                             _grad_of(L, lambda x: _F(L).threshold(x, 0.5, -1.0), a, g),
                                                             _grad_of(L, lambda x: _F(L).hardtanh(x, -1.2, 0.7), a, g)]),
    "backward of tanh sigmoid logit": (["tanh_backward", "sigmoid_backward", "logit_backward"], [(8,), (8,)],
                                       lambda L, a, g: [_grad_of(L, L.tanh, a, g), _grad_of(L, L.sigmoid, a, g),
                                                        _grad_of(L, lambda x: (x * 0.2 + 0.5).logit(), a, g),
                                                        _grad_of(L, lambda x: L.logit(x * 0.3 + 0.5, eps=0.2), a, g)]),
    "backward of smooth activations": (["gelu_backward", "silu_backward", "mish_backward", "softplus_backward"],
                                       [(8,), (8,)],
                                       lambda L, a, g: [_grad_of(L, _F(L).gelu, a, g),
                                                        _grad_of(L, lambda x: _F(L).gelu(x, approximate="tanh"), a, g),
                                                        _grad_of(L, _F(L).silu, a, g), _grad_of(L, _F(L).mish, a, g),
                                                        _grad_of(L, lambda x: _F(L).softplus(x, beta=2), a, g)]),
    "backward of piecewise activations": (["leaky_relu_backward", "elu_backward", "hardswish_backward"],
                                          [(8,), (8,)],
                                          lambda L, a, g: [_grad_of(L, lambda x: _F(L).leaky_relu(x, 0.2), a, g),
                                                           _grad_of(L, lambda x: _F(L).elu(x, 0.7), a, g),
                                                           _grad_of(L, lambda x: _F(L).hardswish(x * 2), a, g)]),
    "backward of hardsigmoid": (["hardsigmoid_backward"], [(8,), (8,)],
                                lambda L, a, g: _grad_of(L, lambda x: _F(L).hardsigmoid(x * 2), a, g)),
}

NN = {
    "softmax": (["softmax.int", "log_softmax.int", "_softmax", "_log_softmax"], [(3, 5)],
                lambda L, a: [a.softmax(1), a.log_softmax(0), _F(L).softmax(a, -1), _F(L).log_softmax(a, 1)]),
    "backward of softmax": (["_softmax_backward_data", "_log_softmax_backward_data"], [(3, 5), (3, 5)],
                            lambda L, a, g: [_grad_of(L, lambda x: x.softmax(1), a, g),
                                             _grad_of(L, lambda x: x.log_softmax(0), a, g),
                                             _grad_of(L, lambda x: _F(L).log_softmax(x * 2, -1), a, g)]),
    "nll_loss": (["nll_loss_forward"], [(4, 3)],
                 lambda L, a: [_F(L).nll_loss(a.log_softmax(1), L.tensor([0, 2, 1, 2])),
                               _F(L).nll_loss(a, L.tensor([1, 1, 0, 2]), reduction="sum"),
                               _F(L).nll_loss(a, L.tensor([1, 0, 0, 2]), reduction="none"),
                               _F(L).nll_loss(a, L.tensor([2, 1, 0, 2]), weight=L.tensor([0.5, 1.0, 2.0], dtype=L.float64),
                                              ignore_index=0)]),
    "layer_norm": (["native_layer_norm"], [(3, 4), (4,), (4,)],
                   lambda L, a, w, b: [_F(L).layer_norm(a, (4,), w, b), _F(L).layer_norm(a * 2, (3, 4))]),
    "rms_norm": (["_fused_rms_norm"], [(3, 4), (4,)],
                 lambda L, a, w: [_F(L).rms_norm(a, (4,), w), _F(L).rms_norm(a, (4,), eps=0.1)]),
    "embedding": (["embedding"], [(5, 3)],
                  lambda L, w: [_F(L).embedding(L.tensor([[0, 4], [4, 2]]), w), _F(L).embedding(L.tensor([1, 1, 3]), w)]),
    "embedding padding_idx": (["embedding"], [(5, 3)],
                              lambda L, w: _F(L).embedding(L.tensor([1, 1, 3, 0]), w, padding_idx=1)),
    "batch_norm": (["native_batch_norm"], [(4, 3, 2), (3,), (3,)],
                   lambda L, a, w, b: [_F(L).batch_norm(a, None, None, w, b, training=True),
                                       _F(L).batch_norm(a, L.zeros(3, dtype=L.float64), L.ones(3, dtype=L.float64),
                                                        w, b, training=False)]),
    "group_norm": (["native_group_norm"], [(2, 4, 3), (4,), (4,)],
                   lambda L, a, w, b: [_F(L).group_norm(a, 2, w, b), _F(L).group_norm(a, 4)]),
}

CONV_POOL = {
    "conv2d": (["_convolution2d"], [(2, 2, 5, 5), (3, 2, 3, 3), (3,)],
               lambda L, x, w, b: [_F(L).conv2d(x, w, b, stride=2, padding=1), _F(L).conv2d(x, w, None, dilation=(1, 2))]),
    "backward of conv2d": (["_conv2d_backward_input", "_conv2d_backward_weight", "_conv2d_backward_bias"],
                           [(1, 2, 4, 4), (3, 2, 3, 3), (3,), (1, 3, 2, 2)],
                           lambda L, x, w, b, g: list(L.autograd.grad(_F(L).conv2d(x, w, b), (x, w, b), g,
                                                                       create_graph=True))),
    "max_pool2d": (["max_pool2d_with_indices"], [(1, 2, 5, 5)],
                   lambda L, x: [_F(L).max_pool2d(x, 2), _F(L).max_pool2d(x, 3, stride=2, padding=1)]),
    # the gradient of a pooling backward w.r.t. the forward input is zero (torch
    # materializes it, kiln leaves it undefined): only the seed is an input here
    "backward of max_pool2d": (["max_pool2d_with_indices_backward"], [(1, 2, 2, 2)],
                               lambda L, g: _grad_of(L, lambda t: _F(L).max_pool2d(t, 2), _fixed(L, (1, 2, 4, 4)), g)),
    "avg_pool2d": (["avg_pool2d", "adaptive_avg_pool2d"], [(1, 2, 5, 5)],
                   lambda L, x: [_F(L).avg_pool2d(x, 2), _F(L).avg_pool2d(x, 3, stride=2, padding=1),
                                 _F(L).adaptive_avg_pool2d(x, (2, 3))]),
    "backward of avg_pool2d": (["avg_pool2d_backward"], [(1, 2, 2, 2)],
                               lambda L, g: _grad_of(L, lambda t: _F(L).avg_pool2d(t, 2), _fixed(L, (1, 2, 4, 4)), g)),
    "backward of adaptive_avg_pool2d": (["_adaptive_avg_pool2d_backward"], [(1, 2, 2, 3)],
                                        lambda L, g: _grad_of(L, lambda t: _F(L).adaptive_avg_pool2d(t, (2, 3)),
                                                              _fixed(L, (1, 2, 5, 5)), g)),
    "unfold and fold": (["im2col", "col2im"], [(1, 2, 4, 5), (1, 8, 6)],
                        lambda L, x, c: [_F(L).unfold(x, (2, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
                                         _F(L).fold(c, (3, 4), (2, 2))]),
}

SPECIAL = {
    "gamma family": (["lgamma", "digamma", "polygamma"], [(6,)],
                     lambda L, a: [_pos(a).lgamma(), _pos(a).digamma(), L.polygamma(1, _pos(a)),
                                   L.polygamma(2, _pos(a) + 1)]),
    "sinc and angles": (["sinc", "deg2rad", "rad2deg"], [(6,)], lambda L, a: [a.sinc(), a.deg2rad(), L.rad2deg(a)]),
    "atan2 hypot": (["atan2", "hypot"], [(2, 3), (2, 3)], lambda L, a, b: [L.atan2(a, b), a.hypot(b)]),
    "logaddexp": (["logaddexp", "logaddexp2"], [(2, 3), (3,)], lambda L, a, b: [L.logaddexp(a, b), a.logaddexp2(b)]),
    "copysign": (["copysign.Tensor", "copysign.Scalar"], [(2, 3), (2, 3)],
                 lambda L, a, b: [L.copysign(a, b), a.copysign(-1.5)]),
    "xlogy": (["xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other"], [(2, 3), (2, 3)],
              lambda L, a, b: [L.xlogy(a, _pos(b)), L.xlogy(2.5, _pos(b)), a.xlogy(3.0)]),
    "nextafter": (["nextafter"], [(2, 3), (2, 3)], lambda L, a, b: L.nextafter(a, b)),  # slope 1 in self, 0 in other
}

def _spd(L, x):
    return x @ x.mT + 3 * L.eye(x.shape[-1], dtype=L.float64)


def _lstm_cell(L, gates, c):
    if L is not torch:
        return list(L._C._functions._lstm_cell_fused(gates, c))
    i, f, g, o = gates.chunk(4, -1)  # torch: the same step composed
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return [o.sigmoid() * c.tanh(), c]


def _gru_cell(L, x, h, hx):
    if L is not torch:
        return L._C._functions._gru_cell_fused(x, h, hx)
    (xr, xz, xn), (hr, hz, hn) = x.chunk(3, -1), h.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * hx


def _lstm_sequence(L, projected, hx, cx, w_hh_t):
    if L is not torch:
        run = L._C._functions._lstm_sequence
        return list(run(projected, hx, cx, w_hh_t, False)[:3]) + list(run(projected, hx, cx, w_hh_t, True)[:3])
    results = []
    for steps in (range(projected.shape[0]), reversed(range(projected.shape[0]))):  # torch: the steps composed
        h, c, outputs = hx, cx, {}
        for t in steps:
            h, c = _lstm_cell(L, projected[t] + h @ w_hh_t, c)
            outputs[t] = h
        results += [torch.stack([outputs[t] for t in range(projected.shape[0])]), h, c]
    return results


RNN = {
    "lstm cell": (["_lstm_cell_fused"], [(3, 8), (3, 2)], _lstm_cell),
    "lstm sequence": (["_lstm_sequence"], [(4, 3, 8), (3, 2), (3, 2), (2, 8)], _lstm_sequence),
    "gru cell": (["_gru_cell_fused"], [(3, 6), (3, 6), (3, 2)], _gru_cell),
}

LAPACK = {
    "solve": (["_linalg_solve"], [(3, 3), (3, 2)],
              lambda L, a, b: L.linalg.solve(a + 3 * L.eye(3, dtype=L.float64), b)),
    "solve_triangular": (["linalg_solve_triangular"], [(3, 3), (3, 2)],
                         lambda L, a, b: [L.linalg.solve_triangular(a + 3 * L.eye(3, dtype=L.float64), b, upper=True),
                                          L.linalg.solve_triangular(a + 3 * L.eye(3, dtype=L.float64), b.mT,
                                                                    upper=False, left=False, unitriangular=True)]),
    "lu": (["linalg_lu_factor_ex"], [(3, 3), (4, 2), (2, 4)],
           lambda L, a, b, c: [L.linalg.lu_factor(a).LU, *L.linalg.lu(b)[1:], *L.linalg.lu(c)[1:]]),
    "cholesky": (["linalg_cholesky_ex"], [(3, 3)],
                 lambda L, x: [L.linalg.cholesky(_spd(L, x)), L.linalg.cholesky(_spd(L, x), upper=True)]),
    "qr": (["linalg_qr"], [(4, 3), (2, 4)], lambda L, a, b: [*L.linalg.qr(a), *L.linalg.qr(b)]),
    # vectors squared: the loss does not depend on each vector's sign
    "eigh": (["_linalg_eigh"], [(3, 3)],
             lambda L, x: [L.linalg.eigh(x + x.mT)[0], L.linalg.eigh(x + x.mT)[1] ** 2]),
    # order- and phase-invariant: eigenpairs may come in another order, eigenvectors with another phase
    "eig": (["_linalg_eig"], [(3, 3)],
            lambda L, x: [(L.linalg.eigvals(x).abs() ** 2).sum().reshape(1),
                          (L.linalg.eig(x)[1].abs() ** 2 * L.linalg.eig(x)[0].real.unsqueeze(-2)).sum().reshape(1)]),
    "svd": (["_linalg_svd"], [(4, 3)],
            lambda L, a: [L.linalg.svd(a, full_matrices=False)[0] ** 2, L.linalg.svdvals(a),
                          L.linalg.svd(a)[2] ** 2]),
}

SORTING = {
    "sort and topk": (["sort.stable", "topk"], [(3, 5)],
                      lambda L, a: [a.sort(1)[0], L.sort(a, dim=0, descending=True, stable=True)[0], a.topk(2)[0],
                                    a.topk(2, 0, largest=False)[0]]),
    # distinct values: every count is 1, so the mode is the smallest value and a small step keeps it so
    "mode": (["_mode"], [(3, 5)], lambda L, a: [L.mode(a, 1)[0], a.mode(0, keepdim=True)[0]]),
}

def _inplace_writes(L, x, z):
    a = x * 1
    a.copy_(z)          # copy_: the gradient goes to z, none to a's old value
    b = x * 2
    b.fill_(3.0)        # fill_: none to b's old value
    c = x * 3
    c.zero_()
    return [a * x, b * x, c + x]


CORE = {
    "fused attention": (["_scaled_dot_product_flash_attention_for_cpu"], [(1, 2, 5, 3), (1, 2, 4, 3), (1, 2, 4, 2)],
                        lambda L, q, k, v: [_F(L).scaled_dot_product_attention(q, k, v),
                                            _F(L).scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7)]),
    "to with a copy": (["_to_copy"], [(3, 4)], lambda L, x: [x.to(L.float64, copy=True) * x]),
    "in-place writes": (["copy_", "fill_.Scalar", "zero_"], [(3, 4), (3, 4)], _inplace_writes),
}

# Cases checked by gradcheck only, with why torch cannot be the oracle.
GRADCHECK_ONLY = {
    "backward of hardsigmoid": "torch has no derivative for hardsigmoid_backward",
}
# Cases compared with torch only, with why finite differences cannot check them.
TORCH_ONLY = {
    "embedding padding_idx": "the padding row gets no gradient by definition, though the output reads it",
}
# Cases whose values differ from torch's by more than rounding, with why.
TOLERANCE = {
    "piecewise activations": (1e-6, "torch's hardsigmoid backward multiplies by 1/6 rounded to float32 "
                              "(0.16666667163...), kiln by 1/6 in the tensor's dtype"),
}

CASES.update(UNARY)
CASES.update(ACTIVATION)
CASES.update(NN)
CASES.update(CONV_POOL)
CASES.update(SORTING)
CASES.update(SPECIAL)
CASES.update(LAPACK)
CASES.update(RNN)
CASES.update(CORE)

# The families this file covers (and the ops of them that have no gradient here, with why).
FAMILY_FILES = ("pointwise_binary.yaml", "shape.yaml", "indexing.yaml", "linalg.yaml", "reduction.yaml",
                "pointwise_unary.yaml", "activation.yaml", "nn.yaml", "conv.yaml", "pool.yaml", "sorting.yaml",
                "attention.yaml", "conversion.yaml", "ops.yaml", "special.yaml", "lapack.yaml", "rnn.yaml")
NOT_HERE = {
    "floor_divide": "torch has no derivative for it (kiln's is zero)",
    "floor_divide.Scalar": "torch has no derivative for it (kiln's is zero)",
    "bernoulli": "random: its gradient is zero, checked in test_random.py",
    "bernoulli.p": "random: its gradient is zero, checked in test_random.py",
    "normal.Tensor_Tensor": "random (reparameterised), checked in test_random.py",
    "normal.Tensor_float": "random (reparameterised), checked in test_random.py",
    "normal.float_Tensor": "random (reparameterised), checked in test_random.py",
    "_scaled_dot_product_flash_attention_dropout_for_cpu": "random: gradients checked against torch with the same "
                                                           "mask in test_nn_attention_dropout.py",
}


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in shapes:
        a = rng.uniform(-2, 2, size=shape)
        a[np.abs(a) < 0.05] = 0.3  # keep clear of kinks (abs, clamp, max) where finite differences disagree
        arrays.append(a)
    return arrays


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _weighted_sum(lib, outs):
    """A scalar that depends on every output element with a distinct weight."""
    total = None
    for i, o in enumerate(outs):
        w = lib.tensor(np.cos(np.arange(o.numel()) + i).reshape(tuple(o.shape)), dtype=lib.float64)
        term = (o * w).reshape(-1)
        term = lib.matmul(term, lib.ones(o.numel(), dtype=lib.float64)) if o.numel() else None
        if term is not None:
            total = term if total is None else total + term
    return total


def _grads(lib, fn, arrays):
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    loss = _weighted_sum(lib, _outputs(fn(lib, *xs)))
    return lib.autograd.grad(loss, xs, allow_unused=True)


@pytest.mark.parametrize("case", [c for c in CASES if c not in GRADCHECK_ONLY])
def test_gradients_match_torch(case):
    _, shapes, fn = CASES[case]
    rtol = TOLERANCE.get(case, (1e-10,))[0]
    arrays = _inputs(shapes, seed=len(case))
    k_grads = _grads(kiln, fn, arrays)
    t_grads = _grads(torch, fn, arrays)
    for i, (kg, tg) in enumerate(zip(k_grads, t_grads)):
        assert (kg is None) == (tg is None), f"input {i}: kiln {kg}, torch {tg}"
        if tg is not None:
            np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=rtol, atol=1e-12, err_msg=f"input {i}")


@pytest.mark.parametrize("case", [c for c in CASES if c not in TORCH_ONLY])
def test_gradcheck(case):
    _, shapes, fn = CASES[case]
    arrays = _inputs(shapes, seed=len(case))
    xs = tuple(kiln.tensor(a, dtype=kiln.float64, requires_grad=True) for a in arrays)
    assert kiln.autograd.gradcheck(lambda *inputs: tuple(_outputs(fn(kiln, *inputs))), xs)


@pytest.mark.parametrize("family_file", FAMILY_FILES)
def test_every_generated_formula_has_a_case(family_file):
    import pathlib

    import yaml

    ops_dir = pathlib.Path(__file__).resolve().parents[3] / "eager" / "ops"
    family = set()
    for entry in yaml.safe_load((ops_dir / family_file).read_text()) or []:
        head = entry["func"].split("(")[0]
        family.add(head if "." in head else head + ".")
    covered = {op if "." in op else op + "." for ops, _, _ in CASES.values() for op in ops}
    covered |= {op if "." in op else op + "." for op in NOT_HERE}
    missing = []
    for name, overload, tags, inputs, generated in kiln._C._op_table():
        key = f"{name}.{overload}"
        if key in family and inputs and generated and "inplace" not in tags and key not in covered:
            missing.append(key.rstrip("."))
    assert not missing, f"{family_file}: ops with generated gradients but no case in CASES: {sorted(missing)}"


@pytest.mark.parametrize("lib", [kiln, torch], ids=["kiln", "torch"])
def test_weight_gradient_of_linear_keeps_the_weights_layout(lib):
    # Note [mm's mat2 gradient keeps mat2's layout] (eager/autograd/FormulaHelpers.h)
    rng = np.random.default_rng(5)
    w = lib.tensor(rng.standard_normal((6, 5)), requires_grad=True)
    x = lib.tensor(rng.standard_normal((4, 5)))
    seed = lib.tensor(rng.standard_normal((4, 6)))
    linear = lib.linear if lib is kiln else lib.nn.functional.linear
    linear(x, w).backward(seed)
    assert tuple(w.grad.stride()) == (5, 1)
    np.testing.assert_allclose(w.grad.numpy(), seed.numpy().T @ x.numpy(), rtol=1e-6)
    m = lib.tensor(rng.standard_normal((5, 6)), requires_grad=True)
    (g,) = lib.autograd.grad(lib.mm(x, m.t().contiguous().t()), m, seed)  # a column-major mat2 that is a leaf's view
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ seed.numpy(), rtol=1e-6)
