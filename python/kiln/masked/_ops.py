"""torch.masked's reductions and normalisations on strided tensors.

Each op takes ``mask`` (a bool tensor broadcastable to the input; None keeps every element),
replaces the masked-out elements by its reduction's identity (_mask.py) and runs kiln's op with
torch.masked's arguments, dtype rules and results: a fully masked-out row gives the identity
(sum 0, amax -inf, ...) or NaN where there is none (mean, median, var, std).
"""

from __future__ import annotations

import kiln
import kiln.nn.functional as F
from kiln._arguments import checked_signature
from kiln.masked._mask import (canonical_dim, check_strided, combine_input_and_mask, input_mask, promoted_dtype)


@checked_signature("sum(Tensor input)")
def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the elements mask keeps (0 where it keeps none)."""
    dtype = promoted_dtype(input) if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return kiln.sum(combine_input_and_mask("sum", input, mask), dims, bool(keepdim), dtype=dtype)


@checked_signature("prod(Tensor input)")
def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the elements mask keeps (1 where it keeps none)."""
    dtype = promoted_dtype(input) if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    result = combine_input_and_mask("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


@checked_signature("cumsum(Tensor input)")
def cumsum(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return kiln.cumsum(combine_input_and_mask("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


@checked_signature("cumprod(Tensor input)")
def cumprod(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return kiln.cumprod(combine_input_and_mask("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


@checked_signature("amax(Tensor input)")
def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    masked = combine_input_and_mask("amax", input, mask)
    return kiln.amax(masked, canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


@checked_signature("amin(Tensor input)")
def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    masked = combine_input_and_mask("amin", input, mask)
    return kiln.amin(masked, canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


@checked_signature("argmax(Tensor input)")
def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    return kiln.argmax(combine_input_and_mask("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


@checked_signature("argmin(Tensor input)")
def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    return kiln.argmin(combine_input_and_mask("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def _count(input, dim, keepdim, mask):
    """How many elements each reduction takes (the mask's, or all of them)."""
    if mask is None:
        return sum(kiln.ones(input.shape, dtype=kiln.int64, device=input.device), dim, keepdim=keepdim)
    return mask.sum(dim=dim, keepdim=bool(keepdim))


@checked_signature("mean(Tensor input)")
def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the elements mask keeps (NaN where it keeps none)."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a floating point or "
                         f"complex dtype. Got: {dtype}")
    check_strided("mean", input, mask)
    inmask = None if mask is None else input_mask(input, mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / _count(input, dim, keepdim, inmask)


@checked_signature("median(Tensor input)")
def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The median of the elements mask keeps along one dim (NaN where it keeps none)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    is_float = input.is_floating_point()
    if not is_float:
        input = input.to(dtype=kiln.float32)
    output = kiln.nanmedian(combine_input_and_mask("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not kiln.isnan(output).any():
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


@checked_signature("logsumexp(Tensor input)")
def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return kiln.logsumexp(combine_input_and_mask("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


@checked_signature("logaddexp(Tensor input)")
def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """logaddexp of input and other, each with its own mask (a masked-out element counts as -inf)."""
    dtype = input.dtype if dtype is None else dtype
    return kiln.logaddexp(combine_input_and_mask("logaddexp", input, input_mask),
                          combine_input_and_mask("logaddexp", other, other_mask)).to(dtype=dtype)


@checked_signature("norm(Tensor input)")
def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The vector norm of order ``ord`` of the elements mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    masked = combine_input_and_mask("norm", input, mask, ord)
    return kiln.linalg.vector_norm(masked, ord, canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    offset = 1.0
    if unbiased is not None:
        offset = 1.0 if unbiased else 0.0
    if correction is not None:
        offset = float(correction)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = kiln.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else kiln.float32
    check_strided("std/var", input, mask)
    inmask = None if mask is None else input_mask(input, mask)
    count = _count(input, dim, True, inmask)
    sample_mean = kiln.divide(sum(input, dim, keepdim=True, dtype=dtype, mask=inmask), count)
    x = kiln.subtract(input, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if offset != 0:
        real = {kiln.complex64: kiln.float32, kiln.complex128: kiln.float64}.get(compute, compute)
        count = kiln.maximum(kiln.subtract(count.to(real), offset), count.new_zeros([]).to(real))
    output = kiln.divide(total, count).to(dtype=dtype)
    return kiln.sqrt(output) if take_sqrt else output


@checked_signature("var(Tensor input)")
def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The variance of the elements mask keeps (NaN where it keeps none)."""
    return _std_var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask,
                    take_sqrt=False)


@checked_signature("std(Tensor input)")
def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The standard deviation of the elements mask keeps (NaN where it keeps none)."""
    return _std_var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask,
                    take_sqrt=True)


@checked_signature("softmax(Tensor input)")
def softmax(input, dim, *, dtype=None, mask=None):
    """softmax over the elements mask keeps (a masked-out element counts as -inf: 0 in the result)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return F.softmax(combine_input_and_mask("amax", input, mask), d, dtype=dtype)


@checked_signature("log_softmax(Tensor input)")
def log_softmax(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return F.log_softmax(combine_input_and_mask("amax", input, mask), d, dtype=dtype)


@checked_signature("softmin(Tensor input)")
def softmin(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return F.softmin(combine_input_and_mask("amin", input, mask), d, dtype=dtype)


@checked_signature("normalize(Tensor input)")
def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the ``ord`` norm of the elements mask keeps along dim (masked-out elements give 0)."""
    dtype = input.dtype if dtype is None else dtype
    masked = combine_input_and_mask("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return kiln.divide(masked, kiln.maximum(nrm, nrm.new_full([], eps)))

