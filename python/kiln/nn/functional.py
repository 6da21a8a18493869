"""kiln.nn.functional: torch.nn.functional's functions, signatures and defaults,
over kiln's C++ ops. This module only gathers them: each function is defined in the
kiln.nn helper module of its topic (listed in kiln/nn/README.md) and imported here.

Note [Functional calls the C++ op where one exists]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Where PyTorch has a dedicated kernel (relu, softmax, log_softmax, layer_norm,
rms_norm, group_norm, batch_norm, embedding, dropout, conv2d, nll_loss...) kiln
has its own C++ op, and the function calls it directly (kiln._C._functions.<op>,
through the ``functions`` alias of kiln/nn/_ops.py), with no Python composite
beside it. Where PyTorch itself composes a function from other ops (log_softmax
and nll_loss into cross_entropy with label smoothing, the distance functions,
normalize, glu, pad's constant mode, multi-head attention), kiln composes it from
kiln ops the same way, so its gradient comes from the autograd formulas of those
ops. A few ops kiln does not have yet (log_sigmoid, adaptive_max_pool2d, the
reflect / replicate / circular pad ops, binary_cross_entropy(_with_logits),
scaled_dot_product_attention) are composed from other ops; where a function asks
``native(name)`` first, a build that gains the op uses it.

Layering: functional.py imports the helper modules; no helper imports functional.py
(kiln.nn.modules and kiln/nn/_torch_spellings.py sit above it and do).
"""

from __future__ import annotations

import math  # noqa: F401  (torch.nn.functional's namespace has math and warnings too)
import warnings  # noqa: F401
from numbers import Number  # noqa: F401
from typing import Optional  # noqa: F401

from kiln import _C
from kiln._comparison import scalar_type_name  # noqa: F401
from kiln.autograd.grad_mode import no_grad  # noqa: F401
from kiln.nn import _pool3d  # noqa: F401
from kiln.nn._ops import _call, detached_amax, native, ops, reduce_mean, reduce_sum  # noqa: F401
from kiln.nn._linear import bilinear, linear  # noqa: F401
from kiln.nn._activations import (  # noqa: F401
    _inplace, _softmax_dim, celu, celu_, elu, elu_, gelu, glu, gumbel_softmax, hardsigmoid, hardswish, hardtanh,
    hardtanh_, leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, relu, relu6, relu_, rrelu, rrelu_, selu,
    selu_, sigmoid, silu, softmax, softmin, softplus, softsign, tanh, tanhshrink, threshold, threshold_,
)
from kiln.nn._activations import hardshrink, prelu, softshrink  # noqa: F401
from kiln.nn._shuffles import channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: F401
from kiln.nn._dropout import (  # noqa: F401
    _SELU_ALPHA, _channel_dropout, _check_p, _noise_dropout, alpha_dropout, dropout, dropout1d, dropout2d,
    dropout3d, feature_alpha_dropout,
)
from kiln.nn._embedding import embedding, one_hot  # noqa: F401
from kiln.nn._embedding_bag import embedding_bag  # noqa: F401
from kiln._padding import (  # noqa: F401
    _PAD_OPS, _check_pad_dims, _check_pad_nonempty, _index_tensor, _pad_by_index, pad,
)
from kiln.nn._normalization import (  # noqa: F401
    _norm, _shape_tuple, batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize,
    rms_norm,
)
from kiln.nn._distances import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from kiln.nn._complex_conv import complex_conv, involves_complex  # noqa: F401
from kiln.nn._conv import _pair, conv1d, conv2d, conv_tbc, fold, unfold  # noqa: F401
from kiln.nn._conv3d import conv3d  # noqa: F401
from kiln.nn._conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: F401
from kiln.nn._pool3d import (  # noqa: F401
    adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool3d, avg_pool3d, max_pool3d,
)
from kiln.nn._pooling import (  # noqa: F401
    _stride, adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d_with_indices, adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices, avg_pool1d, avg_pool2d, lp_pool1d,
    lp_pool2d, lp_pool3d, max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices,
    max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d,
)
from kiln.nn._fractional_pool import (  # noqa: F401
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from kiln.nn._interpolate import interpolate, upsample, upsample_bilinear, upsample_nearest  # noqa: F401
from kiln.nn._grid_sample import affine_grid, grid_sample  # noqa: F401
from kiln.nn._losses import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss, cross_entropy, gaussian_nll_loss,
    hinge_embedding_loss, huber_loss, kl_div, l1_loss, margin_ranking_loss, mse_loss, multi_margin_loss,
    multilabel_margin_loss, multilabel_soft_margin_loss, nll_loss, poisson_nll_loss, smooth_l1_loss,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)
from kiln.nn._ctc import ctc_loss  # noqa: F401
from kiln.nn._linear_cross_entropy import linear_cross_entropy  # noqa: F401
from kiln.nn._attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: F401
from kiln.nn._grouped_mm import grouped_mm  # noqa: F401

Tensor = _C.TensorBase

__all__ = [name for name in dir() if not name.startswith("_") and name not in
           ("annotations", "math", "warnings", "Number", "Optional", "native", "ops", "Tensor", "no_grad", "detached_amax", "reduce_mean", "reduce_sum")]
