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
from kiln import _tensor_bindings

# Every Python-level Tensor method and property, in one place, before anything below can use them
# (importing _tensor_bindings loads the topic modules, and through _stft kiln.fft and kiln.nn.functional).
_tensor_bindings.bind(Tensor)

# The ops generated from ops.yaml (tools/opgen), less those torch keeps out of its
# top level. Imported before the hand-written Python functions below, which win
# where they share a name.
from kiln._generated_ops import FUNCTIONS as _GENERATED_FUNCTIONS  # noqa: E402

globals().update(_GENERATED_FUNCTIONS)

from kiln._creation import (  # noqa: E402
    as_tensor, asarray, empty_permuted, fill, frombuffer, range, scalar_tensor, tensor,  # noqa: A004
)
from kiln import random  # noqa: E402
from kiln.random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state  # noqa: E402
from kiln._shape import broadcast_shapes, broadcast_tensors, split  # noqa: E402
from kiln._indexing import (  # noqa: E402  (nonzero: as_tuple=True over the nonzero ops)
    diagonal_scatter, index_reduce, nonzero, select_scatter, slice_scatter, unravel_index,
)
from kiln._indexing import nonzero_static  # noqa: E402
from kiln._hashing import hash_tensor  # noqa: E402  (torch.hash_tensor: the xor of the elements' 64-bit patterns)
from kiln._legacy_methods import resize_as_  # noqa: E402  (torch.resize_as_ is the Tensor method as a function)
from kiln._layout import sparse_not_implemented as _sparse_not_implemented  # noqa: E402
from kiln._einsum import einsum  # noqa: E402
from kiln import return_types  # noqa: E402
from kiln._named_tuple_ops import aminmax, max, min, sort, topk  # noqa: E402,A004
from kiln._distance import cdist  # noqa: E402  (torch.cdist's compute_mode strings)
from kiln._norms import norm, norm_except_dim, renorm  # noqa: E402
from kiln._norms import tensor_norm as _tensor_norm  # noqa: E402,F401
from kiln._products import chain_matmul, ger, tensordot  # noqa: E402  (tensordot's dims forms)
from kiln import linalg  # noqa: E402
from kiln._comparison import allclose, equal, isclose  # noqa: E402
from kiln._dtypes import can_cast, finfo, iinfo, is_complex, is_floating_point, promote_types, result_type  # noqa: E402,E501
from kiln._shape_composites import (  # noqa: E402
    argwhere, atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, combinations, diagflat, dsplit, hsplit,
    meshgrid, tile, tril_indices, triu_indices, vsplit,
)
from kiln._numeric import (  # noqa: E402
    corrcoef, cov, cross, cumulative_trapezoid, diff, dist, float_power, gradient, nanmean, trapezoid, trapz, vander,
)
from kiln._statistics import (  # noqa: E402
    bincount, cummax, cummin, histc, kthvalue, logcumsumexp, median, mode, nanmedian, nanquantile, quantile, unique,
    unique_consecutive,
)
from kiln._histogram import histogram, histogramdd  # noqa: E402
from kiln._segment_reduce import segment_reduce  # noqa: E402
from kiln._random_sampling import binomial, poisson  # noqa: E402
from kiln._searching import bucketize, isin  # noqa: E402
from kiln._pointwise import frexp, gcd, gcd_, i0, i0_, lcm, lcm_, ldexp, ldexp_, mvlgamma  # noqa: E402
from kiln._windows import bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window  # noqa: E402
from kiln._complex import (  # noqa: E402
    angle, complex, conj, conj_physical, conj_physical_, imag, is_conj, is_neg, isreal, polar, real, resolve_conj,
    resolve_neg, view_as_complex, view_as_real,
)
from kiln._predicates import (  # noqa: E402
    get_device, is_distributed, is_inference, is_nonzero, is_same_size, is_signed, is_storage, typename,
)
from kiln._layout import layout, strided  # noqa: E402
from kiln._view_copies import (  # noqa: E402
    alias_copy, as_strided_copy, as_strided_scatter, detach_copy, diagonal_copy, expand_copy, narrow_copy, permute_copy,
    select_copy, slice_copy, split_copy, split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy, unbind_copy,
    unfold_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, unsqueeze_copy, view_copy,
)
from kiln._config import (  # noqa: E402
    are_deterministic_algorithms_enabled, compiled_with_cxx11_abi, get_default_device, get_deterministic_debug_mode,
    get_float32_matmul_precision, get_num_interop_threads, init_num_threads, is_anomaly_check_nan_enabled,
    is_anomaly_enabled, is_deterministic_algorithms_warn_only_enabled, is_inference_mode_enabled,
    is_vulkan_available, is_warn_always_enabled, set_anomaly_enabled, set_default_device, set_default_tensor_type,
    set_deterministic_debug_mode, set_float32_matmul_precision, set_flush_denormal, set_num_interop_threads,
    set_warn_always, show_config, use_deterministic_algorithms,
)
from kiln._autocast_state import (  # noqa: E402
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_cpu_dtype,
    get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
)
from kiln._stft import istft, stft  # noqa: E402
from kiln._tensor_methods import index_copy, put  # noqa: E402
from kiln import _aliases  # noqa: E402

# torch's alias names (multiply, arcsin, row_stack, positive, ...) and the torch-level
# spellings of Tensor in-place methods (arccos_, clamp_, ...).
globals().update(_aliases.FUNCTIONS)
from kiln import special  # noqa: E402

from kiln.special import _tensor_methods as _special_tensor_methods  # noqa: E402
from kiln.special._gamma import igamma, igammac  # noqa: E402  (torch.igamma / igammac)

_special_tensor_methods.bind(Tensor)
from kiln.linalg._matrix_functions import matrix_exp, orgqr  # noqa: E402
from kiln.linalg._solve import det_legacy as det, logdet, slogdet  # noqa: E402  (torch's legacy linalg spellings)
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
from kiln._memory import empty_cache, memory_stats, reset_peak_memory_stats  # noqa: E402
from kiln.serialization import load, save  # noqa: E402
from kiln._legacy_tensor_types import (  # noqa: E402  (torch's legacy typed constructors)
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
    ShortTensor,
)
from kiln._tensor_str import set_printoptions  # noqa: E402
from kiln import cuda  # noqa: E402
from kiln import library  # noqa: E402
from kiln import autograd  # noqa: E402
from kiln.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from kiln._ops import ops  # noqa: E402
from kiln._version import __version__  # noqa: E402
from kiln._constants import e, has_lapack, has_mkl, has_openmp, has_spectral, inf, nan, newaxis, pi  # noqa: E402
from kiln._predicates import is_tensor, numel  # noqa: E402
import builtins  # noqa: E402,F401  (kiln.builtins has always been reachable: kept so dir(kiln) is unchanged)

from kiln import distributed, futures, nn, optim, utils  # noqa: E402  (torch's subpackages after `import torch`)
from kiln import accelerator, backends, multiprocessing  # noqa: E402,F401  (torch.accelerator, torch.backends...)
from kiln.nn._torch_spellings import (  # noqa: E402  (torch's spellings of nn ops: ATen argument lists)
    adaptive_max_pool1d, affine_grid_generator, alpha_dropout, alpha_dropout_, batch_norm_backward_elemt,
    batch_norm_backward_reduce, batch_norm_elemt, batch_norm_gather_stats, batch_norm_gather_stats_with_counts,
    batch_norm_stats, batch_norm_update_stats, binary_cross_entropy_with_logits, constant_pad_nd, convolution,
    cosine_embedding_loss, ctc_loss, embedding_bag, embedding_renorm_, feature_alpha_dropout,
    feature_alpha_dropout_, feature_dropout, feature_dropout_, frobenius_norm, grid_sampler, grid_sampler_2d,
    grid_sampler_3d, gru, gru_cell, hinge_embedding_loss, instance_norm, kl_div, lstm, lstm_cell,
    margin_ranking_loss, max_pool3d, native_norm, nuclear_norm, poisson_nll_loss, rnn_relu,
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

vmap = func.vmap

# kiln.testing (torch.testing) and kiln.amp (torch.amp: autocast, GradScaler); kiln.autocast is torch.autocast.
from kiln import testing, amp  # noqa: E402

autocast = amp.autocast
GradScaler = amp.GradScaler
from kiln import distributions  # noqa: E402
from kiln import compiler  # noqa: E402  (kiln.compile and kiln.compiler: graph capture, issue 23)
from kiln.compiler import compile  # noqa: E402,A001  (shadows the builtin inside kiln, as torch.compile does)
from kiln import onnx  # noqa: E402  (kiln.onnx.export; the onnx package is imported by the first export)
from kiln import profiler  # noqa: E402  (kiln.profiler: torch.profiler's shape, issue 26)
from kiln import masked, signal, sparse  # noqa: E402  (torch.masked, torch.signal.windows; kiln.sparse refuses)

# torch's sparse constructors (Note [No sparse layouts]): they raise NotImplementedError.
sparse_coo_tensor = _sparse_not_implemented("kiln.sparse_coo_tensor")
sparse_csr_tensor = _sparse_not_implemented("kiln.sparse_csr_tensor")
sparse_csc_tensor = _sparse_not_implemented("kiln.sparse_csc_tensor")
sparse_bsr_tensor = _sparse_not_implemented("kiln.sparse_bsr_tensor")
sparse_bsc_tensor = _sparse_not_implemented("kiln.sparse_bsc_tensor")
sparse_compressed_tensor = _sparse_not_implemented("kiln.sparse_compressed_tensor")
