"""The torch.* spellings of nn ops (torch.kl_div, torch.convolution, torch.grid_sampler,
torch.lstm, torch.batch_norm_update_stats, ...) over kiln.nn.functional. They take
ATen's argument lists: integer reduction codes (0 none, 1 mean, 2 sum), integer
grid-sampler modes, positional-only flags. kiln/__init__.py imports them into the kiln
namespace; the torch.X that is F.X itself (bilinear, conv3d, pdist, ...) it imports from
kiln.nn.functional.

This module sits above kiln.nn.functional and kiln.nn.modules (it imports both); nothing
in kiln.nn imports it.

The functional recurrent forms (torch.lstm / gru / rnn_tanh / rnn_relu, with
the padded-input and the packed (data, batch_sizes) overloads, and the *_cell
functions) run kiln.nn's own recurrence (kiln/nn/modules/rnn.py: RNNBase._run
and _cell_step) over the flat parameter list torch takes: per layer and
direction w_ih, w_hh, then b_ih, b_hh when has_biases, then w_hr when the LSTM
has projections (h0 narrower than c0).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from kiln import _C, _statistics
from kiln._arguments import _require_tensor, check_positional_call, checked_signature
from kiln._norms import matrix_norm
from kiln._creation import tensor
from kiln.autograd.grad_mode import is_grad_enabled, no_grad
from kiln.nn import _ctc, _dropout, _losses
from kiln.nn import functional as F
from kiln.nn.modules.rnn import RNNBase, _cell_step
from kiln.nn.utils.rnn import PackedSequence

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
# torch's schemas say `int reduction=Mean`, but its argument parser reads that default's text
# ("at::Reduction::Mean") as an integer, which is 0: torch.kl_div(a, b) and the other torch.* losses
# called without a reduction return the unreduced loss. So do kiln's spellings.
_DEFAULT_REDUCTION = 0
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _f():
    return _C._functions


def _reduction(code) -> str:
    """An ATen reduction code as its name (a name passes through)."""
    if isinstance(code, str):
        return code
    if code not in _REDUCTIONS:
        raise RuntimeError(f"{code} is not a valid value for reduction")
    return _REDUCTIONS[code]


def _reduce(loss, code):
    reduction = _reduction(code)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _no_cpu_kernel(op: str):
    raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the 'CPU' backend. This could be "
                              "because the operator doesn't exist for this backend, or was omitted during the "
                              "selective/custom build process (if using custom build).")


# --- pooling, dropout, padding, rearrangement ---------------------------------------------------
@checked_signature("adaptive_max_pool1d(Tensor input, int[1] output_size)")
def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, indices), unlike F.adaptive_max_pool1d's default."""
    return F.adaptive_max_pool1d(input, output_size, True)


@checked_signature("max_pool3d(Tensor input, int[1] kernel_size, int[1] stride, int[1] padding, int[1] dilation, "
                   "bool ceil_mode)")
def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    """torch.max_pool3d: the values only (stride [] means the kernel size)."""
    return F.max_pool3d(input, kernel_size, stride if stride else None, padding, dilation, ceil_mode)


@checked_signature("alpha_dropout(Tensor input, float p, bool train)")
def alpha_dropout(input, p: float, train: bool):
    """torch.alpha_dropout(input, p, train)."""
    return F.alpha_dropout(input, p, train)


@checked_signature("alpha_dropout_(Tensor input, float p, bool train)")
def alpha_dropout_(input, p: float, train: bool):
    """torch.alpha_dropout_: in place."""
    return F.alpha_dropout(input, p, train, True)


@checked_signature("feature_alpha_dropout(Tensor input, float p, bool train)")
def feature_alpha_dropout(input, p: float, train: bool):
    """torch.feature_alpha_dropout(input, p, train): one draw per (sample, channel)."""
    return F.feature_alpha_dropout(input, p, train)


@checked_signature("feature_alpha_dropout_(Tensor input, float p, bool train)")
def feature_alpha_dropout_(input, p: float, train: bool):
    """torch.feature_alpha_dropout_: in place."""
    return F.feature_alpha_dropout(input, p, train, True)


@checked_signature("feature_dropout(Tensor input, float p, bool train)")
def feature_dropout(input, p: float, train: bool):
    """torch.feature_dropout(input, p, train): channel dropout of an (N, C, *) input."""
    return _dropout._noise_dropout(input, p, train, False, True, False)


@checked_signature("feature_dropout_(Tensor input, float p, bool train)")
def feature_dropout_(input, p: float, train: bool):
    """torch.feature_dropout_: in place."""
    return _dropout._noise_dropout(input, p, train, True, True, False)


@checked_signature("constant_pad_nd(Tensor input, int[] pad, Scalar value)")
def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad in constant mode (negative pads crop)."""
    return F.pad(input, list(pad), "constant", value)


@checked_signature("rrelu(Tensor input, Scalar lower, Scalar upper, bool training)")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training: bool = False, generator=None):
    """torch.rrelu (``generator`` must be None: kiln draws from its default generator)."""
    _no_generator(generator)
    return F.rrelu(input, lower, upper, training)


@checked_signature("rrelu_(Tensor input, Scalar lower, Scalar upper, bool training)")
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training: bool = False, generator=None):
    """torch.rrelu_: in place."""
    _no_generator(generator)
    return F.rrelu(input, lower, upper, training, True)


def _no_generator(generator):
    if generator is not None:
        raise NotImplementedError("kiln.rrelu: an explicit generator is not supported yet")


# --- convolution --------------------------------------------------------------------------------
@checked_signature("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                   "int[] dilation, bool transposed, int[] output_padding, int groups)")
def convolution(input, weight, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int):
    """torch.convolution: conv1d/2d/3d or their transposes, by the weight's dimensions."""
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.dim() > 5:
        raise RuntimeError(f"kiln.convolution: {weight.dim() - 2}-D convolutions are not supported")
    spatial = weight.dim() - 2
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[spatial - 1]
        return fn(input, weight, bias, list(stride), list(padding), list(output_padding), groups, list(dilation))
    fn = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    return fn(input, weight, bias, list(stride), list(padding), list(dilation), groups)


# --- losses (integer reduction codes) -----------------------------------------------------------
@checked_signature("binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight, Tensor? pos_weight, "
                   "int reduction)")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=_DEFAULT_REDUCTION):
    """torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction: int)."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


@checked_signature("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin, int reduction)")
def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction=_DEFAULT_REDUCTION):
    """torch.cosine_embedding_loss(input1, input2, target, margin, reduction: int)."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def _checked_as_given(op):
    """torch.ctc_loss's parser step on the arguments exactly as given (its refusal lists them so)."""
    @functools.wraps(op)
    def call(*args, **kwargs):
        check_positional_call("ctc_loss", args, _ctc._CTC_OVERLOADS, kwargs)
        return op(*args, **kwargs)
    return call


@_checked_as_given
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction=_DEFAULT_REDUCTION,
             zero_infinity: bool = False):
    """torch.ctc_loss(..., blank, reduction: int, zero_infinity)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                         zero_infinity)


@checked_signature("hinge_embedding_loss(Tensor input, Tensor target, float margin, int reduction)")
def hinge_embedding_loss(input, target, margin: float = 1.0, reduction=_DEFAULT_REDUCTION):
    """torch.hinge_embedding_loss(input, target, margin, reduction: int)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


@checked_signature("kl_div(Tensor input, Tensor target, int reduction, *, bool log_target)")
def kl_div(input, target, reduction=_DEFAULT_REDUCTION, *, log_target: bool = False):
    """torch.kl_div(input, target, reduction: int, *, log_target): 'mean' is the mean over all elements
    (ATen's, without F.kl_div's warning)."""
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return _reduce(loss, reduction)


@checked_signature("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin, int reduction)")
def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction=_DEFAULT_REDUCTION):
    """torch.margin_ranking_loss(input1, input2, target, margin, reduction: int)."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@checked_signature("poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction)")
def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction):
    """torch.poisson_nll_loss(input, target, log_input, full, eps, reduction: int): all required."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


@checked_signature("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin, float p, "
                   "float eps, bool swap, int reduction)")
def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction=_DEFAULT_REDUCTION):
    """torch.triplet_margin_loss(..., margin, p, eps, swap, reduction: int)."""
    return _losses.triplet_margin_loss_any_margin(anchor, positive, negative, margin, p, eps, swap,
                                                  _reduction(reduction))


# --- embedding ----------------------------------------------------------------------------------
@checked_signature("embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, "
                   "bool sparse, Tensor? per_sample_weights, bool include_last_offset)")
def embedding_bag(weight, indices, offsets, scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx=None):
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices), mode 0 sum, 1 mean, 2 max. The output
    (and its gradient) is F.embedding_bag's; the bookkeeping tensors are computed as torch's CPU kernel
    lays them out (for sum: bag_size zero, and offset2bag empty where torch takes its fast path: float32 / float16 /
    bfloat16 weights without padding_idx)."""
    names = {0: "sum", 1: "mean", 2: "max"}
    if mode not in names:
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode}")
    output = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, names[mode], sparse,
                                per_sample_weights, include_last_offset, padding_idx)
    idx = np.asarray(indices.reshape(-1).tolist(), dtype=np.int64)
    starts = np.asarray(offsets.tolist(), dtype=np.int64).reshape(-1)
    bags = len(starts) - 1 if include_last_offset else len(starts)
    ends = np.append(starts[1:], len(idx)) if not include_last_offset else starts[1:]
    starts = starts[:bags]
    ends = ends[:bags]
    pad = None if padding_idx is None else padding_idx % weight.shape[0]
    offset2bag = np.searchsorted(starts, np.arange(len(idx)), side="right") - 1
    if mode == 0:
        training = weight.requires_grad and is_grad_enabled()  # torch sizes these by the bags only then
        zeros = _f().zeros(bags if training else len(offsets.reshape(-1)), dtype=_C.int64)
        fast = pad is None and weight.dtype in (_C.float32, _C.float16, _C.bfloat16)  # torch's fast sum path
        bag_of = _f().zeros(0, dtype=_C.int64) if fast else tensor(offset2bag.tolist(), dtype=_C.int64)
        return output, bag_of, zeros, zeros.clone()
    keep = idx != pad if pad is not None else np.ones(len(idx), dtype=bool)
    sizes = np.array([int(keep[s:e].sum()) for s, e in zip(starts, ends)], dtype=np.int64)
    if mode == 1:
        sizes_t = tensor(sizes.tolist(), dtype=_C.int64)
        return output, tensor(offset2bag.tolist(), dtype=_C.int64), sizes_t, sizes_t.clone()
    values = np.asarray(weight.detach().to(_C.float64).tolist(), dtype=np.float64).reshape(weight.shape)
    best = np.zeros((bags, weight.shape[1]), dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        rows = [i for i in idx[s:e] if pad is None or i != pad]
        if rows:
            best[b] = np.asarray(rows)[values[rows].argmax(0)]
    return (output, tensor(offset2bag.tolist(), dtype=_C.int64), tensor(sizes.tolist(), dtype=_C.int64),
            tensor(best.tolist(), dtype=_C.int64).reshape(bags, weight.shape[1]))


@checked_signature("embedding_renorm_(Tensor weight as input, Tensor indices, float max_norm, float norm_type)")
def embedding_renorm_(weight, indices, max_norm: float, norm_type: float):
    """torch.embedding_renorm_: rows of ``weight`` named in ``indices`` whose norm exceeds max_norm are
    scaled (in place, without gradient) by max_norm / (norm + 1e-7)."""
    _require_tensor(weight, "embedding_renorm_", "input", 1)
    with no_grad():
        rows = _statistics.unique(indices.reshape(-1).to(_C.int64))
        if rows.numel() == 0:
            return weight
        picked = weight.index_select(0, rows)
        norms = _f().linalg_vector_norm(picked, float(norm_type), [1], True)
        scale = _f().where(norms > max_norm, max_norm / (norms + 1e-7), _f().ones_like(norms))
        weight.index_copy_(0, rows, picked * scale)
    return weight


# --- grid sampling ------------------------------------------------------------------------------
def _grid_modes(interpolation_mode: int, padding_mode: int):
    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"grid_sampler(): unknown interpolation_mode {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): unknown padding_mode {padding_mode}")
    return _INTERPOLATION[interpolation_mode], _PADDING[padding_mode]


@checked_signature("grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                   "bool align_corners)")
def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """torch.grid_sampler: F.grid_sample with ATen's codes (0 bilinear, 1 nearest, 2 bicubic; padding 0
    zeros, 1 border, 2 reflection)."""
    mode, padding = _grid_modes(interpolation_mode, padding_mode)
    return F.grid_sample(input, grid, mode, padding, bool(align_corners))


def _grid_sampler_nd(dims: int, input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != dims + 2 or grid.dim() != dims + 2:
        raise RuntimeError(f"grid_sampler(): expected {dims + 2}D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


@checked_signature("grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                   "bool align_corners)")
def grid_sampler_2d(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """torch.grid_sampler_2d: 4-D input and grid only."""
    return _grid_sampler_nd(2, input, grid, interpolation_mode, padding_mode, align_corners)


@checked_signature("grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                   "bool align_corners)")
def grid_sampler_3d(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """torch.grid_sampler_3d: 5-D input and grid only."""
    return _grid_sampler_nd(3, input, grid, interpolation_mode, padding_mode, align_corners)


@checked_signature("affine_grid_generator(Tensor theta, int[] size, bool align_corners)")
def affine_grid_generator(theta, size, align_corners: bool):
    """torch.affine_grid_generator: F.affine_grid with align_corners required."""
    return F.affine_grid(theta, list(size), bool(align_corners))


# --- normalization and norms --------------------------------------------------------------------
@checked_signature("instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                   "Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled)")
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool):
    """torch.instance_norm: ATen's argument order (weight and bias first); cudnn_enabled is ignored."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


@checked_signature("native_norm(Tensor input)")
def native_norm(input, p=2, dim=None, keepdim: bool = False, dtype=None):
    """torch.native_norm: a sparse-only op; on a dense CPU tensor torch raises NotImplementedError, as here."""
    _no_cpu_kernel("native_norm" if dim is None else "native_norm.ScalarOpt_dim_dtype")


@checked_signature("frobenius_norm(Tensor input, int[1] dim, bool keepdim)")
def frobenius_norm(input, dim, keepdim: bool = False):
    """torch.frobenius_norm: the 2-norm over at most two dims (deprecated in torch: it warns; so does kiln)."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead")
    return _f().linalg_vector_norm(input, 2.0, dims if dims else None, keepdim)


@checked_signature("nuclear_norm(Tensor input)")
def nuclear_norm(input, dim=None, keepdim: bool = False):
    """torch.nuclear_norm(input, keepdim=False) (a 2-D input) or (input, dim, keepdim): the sum of the
    singular values (deprecated in torch: it warns; so does kiln)."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if dim is None:
        return matrix_norm(input, "nuc", keepdim=keepdim)
    return matrix_norm(input, "nuc", dim=tuple(dim), keepdim=keepdim)


# --- sync batch norm helpers: torch has CUDA kernels only, except batch_norm_update_stats -----------
@checked_signature("batch_norm_stats(Tensor input, float eps)")
def batch_norm_stats(input, eps: float):
    """torch.batch_norm_stats: CUDA only in torch; NotImplementedError on CPU, as torch."""
    _no_cpu_kernel("batch_norm_stats")


@checked_signature("batch_norm_elemt(Tensor input, Tensor? weight, Tensor? bias, Tensor mean, Tensor invstd, "
                   "float eps)")
def batch_norm_elemt(input, weight, bias, mean, invstd, eps: float):
    """torch.batch_norm_elemt: CUDA only; NotImplementedError on CPU."""
    _no_cpu_kernel("batch_norm_elemt")


@checked_signature("batch_norm_gather_stats(Tensor input, Tensor mean, Tensor invstd, Tensor? running_mean, "
                   "Tensor? running_var, float momentum, float eps, int count)")
def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum: float, eps: float, count):
    """torch.batch_norm_gather_stats: CUDA only; NotImplementedError on CPU."""
    _no_cpu_kernel("batch_norm_gather_stats")


@checked_signature("batch_norm_gather_stats_with_counts(Tensor input, Tensor mean, Tensor invstd, "
                   "Tensor? running_mean, Tensor? running_var, float momentum, float eps, Tensor counts)")
def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum: float,
                                        eps: float, counts):
    """torch.batch_norm_gather_stats_with_counts: CUDA only; NotImplementedError on CPU."""
    _no_cpu_kernel("batch_norm_gather_stats_with_counts")


@checked_signature("batch_norm_backward_reduce(Tensor grad_out, Tensor input, Tensor mean, Tensor invstd, "
                   "Tensor? weight, bool input_g, bool weight_g, bool bias_g)")
def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g: bool, weight_g: bool, bias_g: bool):
    """torch.batch_norm_backward_reduce: CUDA only; NotImplementedError on CPU."""
    _no_cpu_kernel("batch_norm_backward_reduce")


@checked_signature("batch_norm_backward_elemt(Tensor grad_out, Tensor input, Tensor mean, Tensor invstd, "
                   "Tensor? weight, Tensor sum_dy, Tensor sum_dy_xmu, Tensor count)")
def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """torch.batch_norm_backward_elemt: CUDA only; NotImplementedError on CPU."""
    _no_cpu_kernel("batch_norm_backward_elemt")


@checked_signature("batch_norm_update_stats(Tensor input, Tensor? running_mean, Tensor? running_var, float momentum)")
def batch_norm_update_stats(input, running_mean, running_var, momentum: float):
    """torch.batch_norm_update_stats: (mean, biased variance) per channel (dim 1) of ``input``; the running
    stats, when given, move toward (mean, unbiased variance) by ``momentum`` in place. No gradient."""
    if input.dim() < 2:  # the channels are dim 1
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    with no_grad():
        dims = [0] + list(range(2, input.dim()))
        count = input.numel() // max(input.shape[1], 1)
        mean = input.mean(dims)
        shape = [1, input.shape[1]] + [1] * (input.dim() - 2)
        centered = input - mean.reshape(shape)
        var = (centered * centered).mean(dims)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            unbiased = var * (count / (count - 1)) if count > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
    return mean, var


# --- recurrent networks -------------------------------------------------------------------------
class _FlatRNN:
    """The attributes and _weights() RNNBase._run reads, over torch's flat parameter list."""

    _GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}

    def __init__(self, mode, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, proj):
        directions = 2 if bidirectional else 1
        per = 2 + (2 if has_biases else 0) + (1 if proj else 0)
        params = list(params)
        if len(params) != per * num_layers * directions:
            raise RuntimeError(f"kiln.{mode.lower()}: expected {per * num_layers * directions} parameters "
                               f"({num_layers} layers, {directions} directions), got {len(params)}")
        self.mode, self.num_layers, self.dropout, self.training = mode, num_layers, float(dropout), bool(train)
        self.bidirectional, self.batch_first, self.bias = bool(bidirectional), bool(batch_first), bool(has_biases)
        self._groups = [params[i * per:(i + 1) * per] for i in range(num_layers * directions)]
        self.input_size = params[0].shape[1]
        self.hidden_size = params[0].shape[0] // self._GATES[mode]
        self.proj_size = params[per - 1].shape[0] if proj else 0

    def _weights(self, layer, direction):
        group = self._groups[layer * (2 if self.bidirectional else 1) + direction]
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if self.bias else (None, None)
        return w_ih, w_hh, b_ih, b_hh, (group[-1] if self.proj_size else None)


def _run_rnn(mode, input, batch_sizes, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    proj = c0 is not None and h0.shape[-1] != c0.shape[-1]
    net = _FlatRNN(mode, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, proj)
    if batch_sizes is not None:
        output, h, c = RNNBase._run(net, PackedSequence(input, batch_sizes), h0, c0)
        return output.data, h, c
    if input.dim() != 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.dim()}, {input.dim() - 1}], "
                         "but got 2)")
    return RNNBase._run(net, input, h0, c0)


def _split_overload(args, hx_is_list: bool):
    """(input, batch_sizes or None, hx, rest) from the two overloads: (input, hx, params, ...) and
    (data, batch_sizes, hx, params, ...)."""
    packed = isinstance(args[1], _C.TensorBase) and (isinstance(args[2], (list, tuple)) if hx_is_list else
                                                     isinstance(args[2], _C.TensorBase))
    if packed:
        return args[0], args[1], args[2], list(args[3:]), True
    return args[0], None, args[1], list(args[2:]), False


def _is_tensor_list(value):
    return isinstance(value, (list, tuple)) and all(isinstance(v, _C.TensorBase) for v in value)


def _check_recurrent_arguments(name, args, hx_is_list: bool):
    """torch's argument parser's refusal of a call matching neither overload (a TypeError, not the
    IndexError or unpacking error the body would raise)."""
    is_hx = _is_tensor_list if hx_is_list else (lambda v: isinstance(v, _C.TensorBase))
    is_bool = lambda v: isinstance(v, bool)  # noqa: E731
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    is_float = lambda v: isinstance(v, (int, float)) or (isinstance(v, _C.TensorBase) and v.dim() == 0)  # noqa: E731
    is_tensor = lambda v: isinstance(v, _C.TensorBase)  # noqa: E731
    rest = (_is_tensor_list, is_bool, is_int, is_float, is_bool, is_bool)
    overloads = ((is_tensor, is_hx) + rest + (is_bool,), (is_tensor, is_tensor, is_hx) + rest)
    if not any(len(args) == len(checks) and all(check(a) for check, a in zip(checks, args)) for checks in overloads):
        hx = "Tensor[] hx" if hx_is_list else "Tensor hx"
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        f" * (Tensor input, {hx}, tuple of Tensors params, bool has_biases, int num_layers, "
                        f"float dropout, bool train, bool bidirectional, bool batch_first)\n"
                        f" * (Tensor data, Tensor batch_sizes, {hx}, tuple of Tensors params, bool has_biases, "
                        f"int num_layers, float dropout, bool train, bool bidirectional)\n")


def _recurrent(mode, args):
    hx_is_list = mode == "LSTM"
    _check_recurrent_arguments({"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}[mode],
                               args, hx_is_list)
    input, batch_sizes, hx, rest, packed = _split_overload(args, hx_is_list)
    if packed:
        params, has_biases, num_layers, dropout, train, bidirectional = rest
        batch_first = False
    else:
        params, has_biases, num_layers, dropout, train, bidirectional, batch_first = rest
    h0, c0 = (hx[0], hx[1]) if hx_is_list else (hx, None)
    return _run_rnn(mode, input, batch_sizes, h0, c0, params, has_biases, num_layers, dropout, train,
                    bidirectional, batch_first)


def lstm(*args):
    """torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) or
    torch.lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    (output, h_n, c_n); hx = [h0, c0]."""
    return _recurrent("LSTM", args)


def gru(*args):
    """torch.gru(input, hx, params, ...) or (data, batch_sizes, hx, params, ...): (output, h_n)."""
    return _recurrent("GRU", args)[:2]


def rnn_tanh(*args):
    """torch.rnn_tanh: an Elman RNN with tanh; (output, h_n)."""
    return _recurrent("RNN_TANH", args)[:2]


def rnn_relu(*args):
    """torch.rnn_relu: an Elman RNN with relu; (output, h_n)."""
    return _recurrent("RNN_RELU", args)[:2]


def _cell(mode, input, h, c, w_ih, w_hh, b_ih, b_hh):
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    return _cell_step(mode, F.linear(input, w_ih, b_ih), h, c, w_hh.t(), b_hh)


@checked_signature("lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh)")
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell(input, [h, c], w_ih, w_hh, b_ih, b_hh): (h', c')."""
    return _cell("LSTM", input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)


@checked_signature("gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh)")
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: h'."""
    return _cell("GRU", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


@checked_signature("rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh)")
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("RNN_TANH", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


@checked_signature("rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh)")
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("RNN_RELU", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]
