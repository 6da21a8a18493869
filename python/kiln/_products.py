"""torch.tensordot, torch.chain_matmul and torch.linalg.multi_dot / matrix_power
over the ops of eager/ops/linalg.yaml; this file only reads their Python-level
arguments (tensordot's `dims` forms, chain_matmul's varargs); and ger, the outer
product (torch's deprecated name)."""

from __future__ import annotations

import warnings

from kiln import _C
from kiln._arguments import _is_int_list, _require_tensor, _type_name, _unpack_int_list, checked_signature

_F = _C._functions


def _dim_list(d):
    return [int(d)] if isinstance(d, int) else [int(x) for x in d]


def _check_dim_lists(dims):
    """The two dim lists as torch's tensordot op's parser takes them (int[] dims_self, dims_other): each
    one's first element's kind, then every element unpacked."""
    for position, name, value in ((3, "dims_self", dims[0]), (4, "dims_other", dims[1])):
        if isinstance(value, (list, tuple)) and not _is_int_list(value):
            raise TypeError(f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, but found "
                            f"element of type {_type_name(value[0])} at pos 0")
    for name, value in (("dims_self", dims[0]), ("dims_other", dims[1])):
        if isinstance(value, (list, tuple)):
            _unpack_int_list(value, "tensordot", name)


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: contract the last `dims` dims of a with the first of b,
    or the dims given as a pair of lists (or a tensor holding them)."""
    _require_tensor(a, "tensordot", "input", 1)  # the refusal of torch's op, which torch.tensordot calls with a, b
    _require_tensor(b, "tensordot", "other", 2)
    if isinstance(dims, _C.TensorBase):
        dims = dims.item() if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of dimension lists")
        _check_dim_lists(dims)
        dims_a, dims_b = _dim_list(dims[0]), _dim_list(dims[1])
    elif isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        raise TypeError(f"tensordot expects dims to be an int or a pair of lists, got {type(dims).__name__}")
    if out is not None:
        return _F.tensordot(a, b, dims_a, dims_b, out=out)
    return _F.tensordot(a, b, dims_a, dims_b)


def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated in torch for linalg.multi_dot, and warns the same way)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                  "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                  "multiple parameters.", UserWarning, stacklevel=2)
    if out is not None:
        return _F.linalg_multi_dot(list(matrices), out=out)
    return _F.chain_matmul(list(matrices))


@checked_signature("linalg_multi_dot(Tensor[] tensors, *, Tensor? out)")
def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the product of a chain in the cheapest order."""
    if out is not None:
        return _F.linalg_multi_dot(list(tensors), out=out)
    return _F.linalg_multi_dot(list(tensors))


@checked_signature("linalg_matrix_power(Tensor A as input, int n, *, Tensor? out)")
def matrix_power(A, n, *, out=None):
    """torch.linalg.matrix_power: A multiplied by itself n times (n < 0: the inverse's -n-th power;
    n = 0: the identity, as A's clone overwritten, so it records a (zero) gradient as torch's does)."""
    if n < 0:
        from kiln.linalg._solve import inv  # same layer; imported here to keep kiln._products free of linalg
        _F.matrix_power(A, 0)  # matrix_power's own shape checks and messages first
        result = _F.matrix_power(inv(A), -n)
    elif n == 0:
        identity = _F.matrix_power(A, 0)
        result = A.clone(memory_format=_C.contiguous_format).copy_(identity) if A.requires_grad else identity
    else:
        result = _F.matrix_power(A, n)
    if out is None:
        return result
    return _C._functions._copy_to_out(result, out)


@checked_signature("ger(Tensor input, Tensor vec2, *, Tensor? out)")
def ger(input, vec2, *, out=None):
    """torch.ger: the outer product (kiln.outer)."""
    return _C._functions.outer(input, vec2, out=out) if out is not None else _C._functions.outer(input, vec2)
