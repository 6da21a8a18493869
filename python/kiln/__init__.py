"""kiln: a PyTorch-shaped deep-learning framework with a C++ core.

``import kiln as torch`` is the goal: the same names, signatures and behaviour.
"""

from kiln import _C
from kiln._C import (  # noqa: F401  (dtypes and core types are re-exported)
    Generator,
    Size,
    OutOfMemoryError,
    bfloat16,
    bool,
    cdouble,
    cfloat,
    channels_last,
    channels_last_3d,
    complex64,
    complex128,
    contiguous_format,
    default_generator,
    device,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    get_num_threads,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    memory_format,
    preserve_format,
    set_default_dtype,
    set_num_threads,
    short,
    uint8,
)
from kiln._tensor import Tensor
from kiln import _conversion  # noqa: E402  (Tensor.to, .float(), .cpu(), .type(), ...)

_conversion.install(Tensor)

# The ops generated from ops.yaml (tools/opgen): every public name of
# kiln._C._functions. Imported before the hand-written Python functions below,
# which win where they share a name.
globals().update({_name: getattr(_C._functions, _name) for _name in dir(_C._functions) if not _name.startswith("_")})
# Ops torch keeps out of its top-level namespace (torch.nn.functional and
# torch._C._nn have them; eager/ops/activation.yaml): reachable as kiln._C._functions.<name>.
for _name in ("elu", "elu_", "elu_backward", "gelu", "gelu_backward", "hardsigmoid", "hardsigmoid_",
              "hardsigmoid_backward", "hardswish", "hardswish_", "hardswish_backward", "hardtanh", "hardtanh_",
              "hardtanh_backward", "leaky_relu", "leaky_relu_", "leaky_relu_backward", "logit_backward", "mish",
              "mish_", "mish_backward", "relu6", "sigmoid_backward", "silu", "silu_", "silu_backward", "softplus",
              "softplus_backward", "tanh_backward", "threshold_backward"):
    globals().pop(_name, None)

from kiln._creation import tensor  # noqa: E402
from kiln import random  # noqa: E402
from kiln.random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state  # noqa: E402
from kiln._shape import broadcast_shapes, broadcast_tensors, split  # noqa: E402
from kiln._indexing import index_reduce, nonzero  # noqa: E402  (as_tuple=True over the nonzero ops)
from kiln._einsum import einsum  # noqa: E402
from kiln import return_types  # noqa: E402

max = return_types._named(return_types.max, _C._functions.max, return_types.max_out)  # noqa: A001
min = return_types._named(return_types.min, _C._functions.min, return_types.min_out)  # noqa: A001
Tensor.max = return_types._named(return_types.max, _C.TensorBase.max)
Tensor.min = return_types._named(return_types.min, _C.TensorBase.min)
sort = return_types._named(return_types.sort, _C._functions.sort, return_types.sort_out)
topk = return_types._named(return_types.topk, _C._functions.topk, return_types.topk_out)
Tensor.sort = return_types._named(return_types.sort, _C.TensorBase.sort)
Tensor.topk = return_types._named(return_types.topk, _C.TensorBase.topk)
from kiln._distance import cdist  # noqa: E402  (torch.cdist's compute_mode strings)
aminmax = return_types._named(return_types.aminmax, _C._functions.aminmax, return_types.aminmax_out)
Tensor.aminmax = return_types._named(return_types.aminmax, _C.TensorBase.aminmax)
from kiln._norms import norm  # noqa: E402
from kiln._norms import tensor_norm as _tensor_norm  # noqa: E402

Tensor.norm = _tensor_norm
from kiln._products import chain_matmul, tensordot  # noqa: E402  (tensordot's dims forms)
from kiln import linalg  # noqa: E402
from kiln._comparison import allclose, equal, isclose  # noqa: E402
from kiln._dtypes import can_cast, finfo, iinfo, is_complex, is_floating_point, promote_types, result_type  # noqa: E402,E501
from kiln._shape_composites import (  # noqa: E402
    argwhere, atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, diagflat, dsplit, hsplit, meshgrid,
    tile, tril_indices, triu_indices, vsplit,
)
from kiln._numeric import (  # noqa: E402
    corrcoef, cov, cross, cumulative_trapezoid, diff, dist, float_power, nanmean, trapezoid, vander,
)
from kiln._statistics import (  # noqa: E402
    bincount, cummax, cummin, histc, kthvalue, logcumsumexp, median, nanmedian, nanquantile, quantile, unique,
    unique_consecutive,
)
from kiln import _aliases, _numeric, _tensor_factories, _tensor_methods  # noqa: E402
from kiln import special  # noqa: E402
from kiln.special import _tensor_methods as _special_tensor_methods  # noqa: E402
from kiln.special._gamma import igamma, igammac  # noqa: E402  (torch.igamma / igammac)
from kiln._tensor_methods import index_copy, put  # noqa: E402

_aliases.install(globals(), Tensor)
_special_tensor_methods.bind(Tensor)
_tensor_factories.install(Tensor)
_tensor_methods.install(Tensor)
for _fn in (isclose, allclose, equal, is_floating_point, is_complex, argwhere, tile, diagflat, hsplit, vsplit, dsplit,
            diff, cross, nanmean, cov, corrcoef, dist, float_power, bincount, cummax, cummin, histc, kthvalue,
            logcumsumexp, median, nanmedian, nanquantile, quantile, unique, unique_consecutive):
    if not hasattr(Tensor, _fn.__name__):
        setattr(Tensor, _fn.__name__, _fn)
Tensor.float_power_ = _numeric.float_power_
from kiln import _indexing  # noqa: E402

Tensor.scatter_reduce_ = _indexing.scatter_reduce_
Tensor.index_reduce = _indexing.index_reduce
Tensor.index_reduce_ = _indexing.index_reduce_
from kiln.linalg._matrix_functions import matrix_exp, orgqr, tensor_matrix_exp as _tensor_matrix_exp  # noqa: E402

Tensor.matrix_exp = _tensor_matrix_exp
Tensor.orgqr = orgqr
from kiln._numeric_more import frexp, gcd, i0, lcm, ldexp, mvlgamma  # noqa: E402
from kiln import _numeric_more  # noqa: E402

for _fn in (frexp, gcd, i0, lcm, ldexp, mvlgamma, _numeric_more.gcd_, _numeric_more.i0_, _numeric_more.lcm_,
            _numeric_more.ldexp_, _numeric_more.mvlgamma_):
    setattr(Tensor, _fn.__name__, _fn)
gcd_, i0_, lcm_, ldexp_ = _numeric_more.gcd_, _numeric_more.i0_, _numeric_more.lcm_, _numeric_more.ldexp_
from kiln._tensor_more import (  # noqa: E402
    bartlett_window, blackman_window, bucketize, diagonal_scatter, ger, hamming_window, hann_window, isin, renorm,
    select_scatter, slice_scatter, unravel_index,
)
from kiln import _tensor_more  # noqa: E402

for _fn in (renorm, _tensor_more.renorm_, ger, _tensor_more.fill_diagonal_, diagonal_scatter, select_scatter,
            slice_scatter):
    if not hasattr(Tensor, _fn.__name__):
        setattr(Tensor, _fn.__name__, _fn)
from kiln.linalg._solve import det, logdet, slogdet  # noqa: E402  (torch's legacy linalg spellings)
from kiln.linalg._solve import inv as inverse  # noqa: E402
from kiln.linalg._decompositions import (  # noqa: E402
    cholesky_inverse, cholesky_solve, pinverse, triangular_solve,
)
from kiln.linalg._decompositions import cholesky_legacy as cholesky  # noqa: E402
from kiln.linalg._decompositions import qr_legacy as qr  # noqa: E402
from kiln.linalg._decompositions import svd_legacy as svd  # noqa: E402
from kiln.linalg._lu import lu_legacy as lu, lu_solve_legacy as lu_solve, lu_unpack  # noqa: E402
from kiln.linalg._raw_factors import geqrf, ormqr  # noqa: E402
from kiln.linalg import _tensor_methods as _linalg_tensor_methods  # noqa: E402

_linalg_tensor_methods.bind(Tensor)
from kiln._memory import empty_cache, memory_stats, reset_peak_memory_stats
from kiln._config import show_config
from kiln.serialization import load, save
from kiln._tensor_str import set_printoptions
from kiln import cuda
from kiln import library
from kiln import autograd
from kiln.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from kiln._ops import ops

__version__ = "0.1.0"


def is_tensor(obj) -> "builtins.bool":
    """True when ``obj`` is a kiln tensor (like ``torch.is_tensor``)."""
    return isinstance(obj, _C.TensorBase)


def numel(input) -> "builtins.int":
    """The number of elements of ``input``."""
    return input.numel()


import builtins  # noqa: E402  (for the annotations above, which name the shadowed builtins)

from kiln import nn, optim, utils  # noqa: E402  (torch.nn, torch.optim and torch.utils after `import torch`)

# The late additions install themselves last, so they may use everything above (nn.functional included).
from kiln import _api_extra, _numeric_extra  # noqa: E402

_api_extra.install(globals(), Tensor)
from kiln import _complex  # noqa: E402  (after _api_extra: its complex-aware real/imag/conj/... replace the real-only ones)

_complex.install(globals(), Tensor)
_numeric_extra.install(globals(), Tensor)
from kiln.nn._torch_spellings import (  # noqa: E402  (torch's spellings of nn ops: ATen argument lists)
    adaptive_max_pool1d, affine_grid_generator, alpha_dropout, alpha_dropout_, batch_norm_backward_elemt,
    batch_norm_backward_reduce, batch_norm_elemt, batch_norm_gather_stats, batch_norm_gather_stats_with_counts,
    batch_norm_stats, batch_norm_update_stats, binary_cross_entropy_with_logits, constant_pad_nd, convolution,
    cosine_embedding_loss, ctc_loss, embedding_bag, embedding_renorm_, feature_alpha_dropout,
    feature_alpha_dropout_, feature_dropout, feature_dropout_, frobenius_norm, grid_sampler, grid_sampler_2d,
    grid_sampler_3d, gru, gru_cell, hinge_embedding_loss, instance_norm, kl_div, lstm, lstm_cell,
    margin_ranking_loss, max_pool3d, native_norm, norm_except_dim, nuclear_norm, poisson_nll_loss, rnn_relu,
    rnn_relu_cell, rnn_tanh, rnn_tanh_cell, rrelu, rrelu_, triplet_margin_loss,
)
from kiln.nn.functional import (  # noqa: E402  (torch.X is F.X for these)
    bilinear, channel_shuffle, conv3d, conv_tbc, conv_transpose1d, conv_transpose2d, conv_transpose3d,
    cosine_similarity, hardshrink, native_channel_shuffle, pairwise_distance, pdist, pixel_shuffle, pixel_unshuffle,
    prelu,
)
from kiln.nn import _tensor_methods as _nn_tensor_methods  # noqa: E402

_nn_tensor_methods.bind(Tensor)
from kiln.linalg._lowrank import lobpcg, pca_lowrank, svd_lowrank  # noqa: E402  (torch keeps them top-level)
from kiln.linalg._removed import eig, lstsq, matrix_rank, solve, symeig  # noqa: E402  (raise torch's errors)

# kiln.func (torch.func: vmap, grad, jacrev, functional_call, ...) and kiln.vmap, after everything they build on.
from kiln import fft, func  # noqa: E402  (kiln.fft: torch.fft on FFTW)
from kiln import _stft  # noqa: E402  (stft / istft on kiln.fft)

_stft.install(globals(), Tensor)

vmap = func.vmap

# kiln.testing (torch.testing) and kiln.amp (torch.amp: autocast, GradScaler); kiln.autocast is torch.autocast.
from kiln import testing, amp  # noqa: E402

autocast = amp.autocast
GradScaler = amp.GradScaler
from kiln import distributions  # noqa: E402
