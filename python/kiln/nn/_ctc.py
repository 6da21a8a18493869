"""F.ctc_loss composed from kiln's ops; re-exported by kiln.nn.functional.

Note [CTC as a log-space forward recursion]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each target l (length L) is extended with blanks to l' = (b, l1, b, l2, ..., b)
(length 2L + 1). alpha_t(s), the log-probability of all alignments of the
first t + 1 frames that end at l'_s, is
    alpha_0(0) = lp_0(b), alpha_0(1) = lp_0(l1),
    alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2)) + lp_t(l'_s),
the s - 2 term only where l'_s is a label that differs from l'_{s-2}. The batch
runs as one [N, 2 Lmax + 1] recursion over time, each sample frozen after its
input length; its log-likelihood is the logsumexp of its last two states. The
logsumexp is shifted by a detached maximum and guards its all -inf case so no
NaN reaches the gradient, which autograd takes through the recursion.

torch's CTC gradient with respect to log_probs is the true one plus exp(log_probs)
over each sample's frames (its kernel assumes log_probs are log_softmax outputs,
where the extra term cancels). kiln adds a zero-valued term with that gradient,
so gradients match torch's both for log_probs leaves and through log_softmax.
"""

from __future__ import annotations

import math

import numpy as np

from kiln import _C
from kiln._arguments import check_positional_call
from kiln._creation import tensor
from kiln.nn._losses import _REDUCTION_ENUM, _check_reduction
from kiln.nn._ops import functions as _functions

_WHERE = "(while checking arguments for ctc_loss_allocate_outputs)"


def _f():
    return _C._functions


def _tensor(values, dtype):
    return tensor(values, dtype=dtype)


def _lengths(value, name: str) -> list:
    """Lengths as a list of ints, from a tensor (integral) or a sequence of ints."""
    if isinstance(value, _C.TensorBase):
        if value.dtype.is_floating_point or value.dtype == _C.bool:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in np.asarray(value.numpy()).reshape(-1)]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def _check_lengths(log_probs, targets, input_lengths, target_lengths):
    """torch's checks on the batched [T, N, C] log_probs; returns the [N, Lmax] padded targets (numpy)."""
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
                           f"argument #1 'log_probs' {_WHERE}")
    frames, batch = log_probs.shape[0], log_probs.shape[1]
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length} {_WHERE}")
    values = np.asarray(targets.detach().numpy()).astype(np.int64)
    longest = max(target_lengths, default=0)
    if targets.dim() == 1:
        total = sum(target_lengths)
        if values.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size {values.shape[0]} "
                               f"for argument #2 'targets' {_WHERE}")
        padded = np.zeros((batch, longest), dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(target_lengths)])
        for n, length in enumerate(target_lengths):
            padded[n, :length] = values[offsets[n]:offsets[n] + length]
    else:
        if values.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{values.shape[1]} for argument #2 'targets' {_WHERE}")
        padded = np.zeros((batch, longest), dtype=np.int64)
        for n, length in enumerate(target_lengths):
            padded[n, :length] = values[n, :length]
    for length in input_lengths:
        if length < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {length} {_WHERE}")
        if length > frames:
            raise RuntimeError(f"Expected input_lengths to have value at most {frames}, but got value {length} "
                               f"{_WHERE}")
    classes = log_probs.shape[2]
    used = np.concatenate([padded[n, :length] for n, length in enumerate(target_lengths)] + [np.zeros(0, np.int64)])
    if used.size and (used.min() < 0 or used.max() >= classes):
        raise RuntimeError(f"ctc_loss: targets must be class indices in [0, {classes}), but got "
                           f"{int(used.min()) if used.min() < 0 else int(used.max())}")
    return padded


def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) elementwise; -inf (with a zero gradient) where all three are -inf."""
    kiln = _f()
    top = kiln.maximum(kiln.maximum(a, b), c).detach()
    shift = kiln.where(_functions.isinf(top), kiln.zeros_like(top), top)
    total = _functions.exp(a - shift) + _functions.exp(b - shift) + _functions.exp(c - shift)
    positive = total > 0
    safe = kiln.where(positive, total, kiln.ones_like(total))
    return kiln.where(positive, _functions.log(safe) + shift, kiln.full_like(total, -math.inf))


def _log_likelihoods(log_probs, padded: np.ndarray, input_lengths: list, target_lengths: list, blank: int):
    """[N] log p(target | input) by the recursion of Note [CTC as a log-space forward recursion]."""
    kiln = _f()
    frames, batch, _ = log_probs.shape
    states = 2 * padded.shape[1] + 1
    extended = np.full((batch, states), blank, dtype=np.int64)
    extended[:, 1::2] = padded
    skip = np.zeros((batch, states), dtype=bool)
    skip[:, 3::2] = extended[:, 3::2] != extended[:, 1:-2:2]
    index = _tensor(extended.tolist(), _C.int64)
    emissions = log_probs.gather(2, index.unsqueeze(0).expand(frames, batch, states))   # [T, N, S]
    dtype = log_probs.dtype
    skip_mask = _tensor(skip.tolist(), _C.bool)
    ninf = kiln.full((batch, states), -math.inf, dtype=dtype)
    pad1 = kiln.full((batch, 1), -math.inf, dtype=dtype)
    pad2 = kiln.full((batch, 2), -math.inf, dtype=dtype)
    empty = _tensor([length == 0 for length in input_lengths], _C.bool)
    empty_value = _tensor([0.0 if n == 0 else -math.inf for n in target_lengths], dtype)
    if frames == 0:  # no frames: certain for an empty target, impossible otherwise
        return empty_value + log_probs.sum((0, 2)) * 0
    first = emissions[0]
    start = np.zeros((batch, states), dtype=bool)
    start[:, :2] = True
    alpha = kiln.where(_tensor(start.tolist(), _C.bool), first, ninf)
    lengths = _tensor(input_lengths, _C.int64).unsqueeze(1)
    for t in range(1, max(input_lengths, default=0)):
        prev1 = kiln.cat([pad1, alpha[:, :-1]], 1)
        prev2 = kiln.where(skip_mask, kiln.cat([pad2, alpha[:, :-2]], 1), ninf) if states > 2 else ninf
        step = _logsumexp3(alpha, prev1, prev2) + emissions[t]
        alpha = kiln.where(lengths > t, step, alpha)
    last = _tensor([2 * n for n in target_lengths], _C.int64).unsqueeze(1)
    before = _tensor([max(2 * n - 1, 0) for n in target_lengths], _C.int64).unsqueeze(1)
    end = alpha.gather(1, last).squeeze(1)
    penultimate = alpha.gather(1, before).squeeze(1)
    has_label = _tensor([n > 0 for n in target_lengths], _C.bool)
    penultimate = kiln.where(has_label, penultimate, kiln.full_like(penultimate, -math.inf))
    result = _logsumexp3(end, penultimate, kiln.full_like(end, -math.inf))
    return kiln.where(empty, empty_value, result)                                # zero-length inputs as above


def _torch_gradient_term(log_probs, input_lengths: list):
    """[N] zeros whose gradient is exp(log_probs) over each sample's frames (torch's extra term)."""
    frames = log_probs.shape[0]
    probs = _functions.exp(log_probs)
    mask = np.arange(frames)[:, None] < np.asarray(input_lengths)[None, :]         # [T, N]
    frames_mask = _tensor(mask.tolist(), _C.bool).unsqueeze(2)
    zero = _f().where(frames_mask, probs - probs.detach(), _f().zeros_like(probs))
    return zero.sum((0, 2))


# torch.ctc_loss's overloads, as its parser lists them: F.ctc_loss passes its seven arguments on positionally
# (the reduction as its integer code), and lengths bind either as two int lists or as two tensors.
_CTC_OVERLOADS = (
    ("(Tensor log_probs, Tensor targets, tuple of ints input_lengths, tuple of ints target_lengths, int blank = 0, "
     "int reduction = at::Reduction::Mean, bool zero_infinity = False)",
     ("Tensor", "Tensor", "int[]", "int[]", "int", "int", "bool")),
    ("(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank = 0, "
     "int reduction = at::Reduction::Mean, bool zero_infinity = False)",
     ("Tensor", "Tensor", "Tensor", "Tensor", "int", "int", "bool")),
)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """The connectionist temporal classification loss of [T, N, C] (or [T, C]) log-probabilities. Its
    refusals are torch's: the reduction's name first, then torch.ctc_loss's parser on the seven arguments."""
    _check_reduction(reduction)
    check_positional_call("ctc_loss", (log_probs, targets, input_lengths, target_lengths, blank,
                                       _REDUCTION_ENUM[reduction], zero_infinity), _CTC_OVERLOADS)
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{_scalar(log_probs.dtype)}'")
    inputs = _lengths(input_lengths, "input_lengths")
    lengths = _lengths(target_lengths, "target_lengths")
    if log_probs.dim() not in (2, 3):  # [T, C] or [T, N, C]
        raise RuntimeError(f"ctc_loss: log_probs must be 2-D or 3-D, but got a {log_probs.dim()}-D tensor")
    if blank < 0 or blank >= log_probs.shape[-1]:
        raise RuntimeError("blank must be in label range")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    padded = _check_lengths(log_probs, targets, inputs, lengths)
    loss = -_log_likelihoods(log_probs, padded, inputs, lengths, blank)
    if log_probs.requires_grad:
        loss = loss + _torch_gradient_term(log_probs, inputs)
    if zero_infinity:
        loss = _f().where(_functions.isinf(loss), _f().zeros_like(loss), loss)
    if reduction == "mean":
        divisor = _tensor([max(n, 1) for n in lengths], loss.dtype)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def _scalar(dtype) -> str:
    return {_C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
            _C.bool: "Bool"}.get(dtype, str(dtype))
