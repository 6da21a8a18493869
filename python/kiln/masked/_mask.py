"""The plumbing of kiln.masked: a mask made canonical, the identity of each reduction, and the
input with its masked-out elements replaced by that identity (torch.masked's strided path)."""

from __future__ import annotations

import kiln

_SMALL_INTEGERS = (kiln.uint8, kiln.bool, kiln.int8, kiln.int16, kiln.int32)


def is_masked_tensor(obj) -> bool:
    """kiln has no MaskedTensor: nothing is one."""
    return False


def masked_tensor(data, mask, requires_grad=False):
    raise NotImplementedError("kiln.masked.masked_tensor: kiln has no MaskedTensor; pass the mask to the masked "
                              "operations (mask=...) instead")


def as_masked_tensor(data, mask):
    raise NotImplementedError("kiln.masked.as_masked_tensor: kiln has no MaskedTensor; pass the mask to the masked "
                              "operations (mask=...) instead")


def check_strided(name: str, *tensors) -> None:
    for tensor in tensors:
        if tensor is not None and getattr(tensor, "layout", kiln.strided) is not kiln.strided:
            raise NotImplementedError(f"masked {name}: kiln supports strided tensors only (got {tensor.layout})")


def canonical_dim(dim, ndim: int) -> tuple:
    """dim as a sorted tuple of non-negative dims (None or () is every dim)."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def input_mask(input, mask):
    """mask broadcast to input's shape, as bool."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    check_strided("operation", mask)
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                             "input)")
        mask = kiln.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=kiln.bool)


def integer_bounds(dtype):
    info = kiln.iinfo(dtype)
    return info.min, info.max


def reduction_identity(name: str, input, *args):
    """The value that leaves reduction ``name`` unchanged, as a 0-dim tensor of input's dtype
    (None where it is not defined: mean, var, std)."""
    dtype, device = input.dtype, input.device
    if name in ("sum", "cumsum"):
        return kiln.tensor(0, dtype=dtype, device=device)
    if name in ("prod", "cumprod"):
        return kiln.tensor(1, dtype=dtype, device=device)
    if name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if input.is_floating_point():
            return kiln.tensor(-kiln.inf, dtype=dtype, device=device)
        if input.is_complex() and name == "logsumexp":
            return kiln.tensor(complex(-kiln.inf, 0), dtype=dtype, device=device)
        if dtype.is_signed or dtype == kiln.uint8:
            return kiln.tensor(integer_bounds(dtype)[0], dtype=dtype, device=device)
    elif name in ("amin", "argmin"):
        if input.is_floating_point():
            return kiln.tensor(kiln.inf, dtype=dtype, device=device)
        if dtype.is_signed or dtype == kiln.uint8:
            return kiln.tensor(integer_bounds(dtype)[1], dtype=dtype, device=device)
    elif name in ("mean", "var", "std"):
        return None
    elif name == "norm":
        ord = args[0] if args else 2
        if ord == float("-inf"):
            if not input.is_floating_point():
                raise AssertionError(f"input must be floating point, got {input.dtype}")
            return kiln.tensor(kiln.inf, dtype=dtype, device=device)
        return kiln.tensor(0, dtype=dtype, device=device)
    elif name == "median":  # nanmedian skips NaN, so NaN is its identity
        return kiln.tensor(kiln.nan, dtype=dtype if input.is_floating_point() else kiln.float32, device=device)
    raise NotImplementedError(f"identity of {name} on {dtype} input")


def combine_input_and_mask(name: str, input, mask, *args):
    """input with the elements mask leaves out replaced by reduction ``name``'s identity."""
    check_strided(name, input, mask)
    if mask is None:
        return input
    return kiln.where(input_mask(input, mask), input, reduction_identity(name, input, *args))


def promoted_dtype(input):
    """sum's and prod's result dtype when none is given: small integers and bool become int64."""
    return kiln.int64 if input.dtype in _SMALL_INTEGERS else input.dtype


_REDUCTIONS = frozenset(("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std",
                         "logsumexp"))
_NORMALIZATIONS = frozenset(("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"))


def _input_mask(input, *args, **kwargs):
    """torch.masked._input_mask: the ``mask`` keyword broadcast to input's shape, as bool."""
    return input_mask(input, kwargs.get("mask"))


def _output_mask(op, input, *args, **kwargs):
    """torch.masked._output_mask: which elements of masked op ``op``'s result some kept element
    reaches (a reduction's: any over the reduced dims; a normalisation's: the input mask)."""
    name = getattr(op, "__name__", None)
    if not callable(op) or name not in _REDUCTIONS | _NORMALIZATIONS:
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    if name == "norm" and args:
        args = args[1:]  # the ord argument
    dim = args[0] if args else kwargs.get("dim")
    mask = _input_mask(input, *args, **kwargs)
    dims = canonical_dim(dim, input.ndim)
    keepdim = bool(kwargs.get("keepdim", False))
    for d in reversed(dims) if mask.ndim else ():
        mask = mask.any(dim=d, keepdim=keepdim)
    return mask
