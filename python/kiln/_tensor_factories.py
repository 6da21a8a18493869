"""Tensor.new_zeros, new_ones, new_full, new_empty, new_empty_strided and
new_tensor: tensors that take the dtype and device of the tensor they are
called on unless told otherwise (torch/_tensor.py and _C._TensorBase)."""

from __future__ import annotations

import warnings

from kiln import _C
from kiln._creation import tensor


def _size(size):
    """`new_zeros(2, 3)` and `new_zeros((2, 3))` alike."""
    if len(size) == 1 and not isinstance(size[0], int):
        return list(size[0])
    return list(size)


def _finish(result, requires_grad):
    if requires_grad:
        result.requires_grad_(True)
    return result


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """An uninitialised tensor of ``size`` with ``self``'s dtype and device by default."""
    return _finish(_C._functions.empty(_size(size), dtype=dtype or self.dtype, device=device or self.device),
                   requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """An uninitialised tensor of ``size`` and ``stride`` with ``self``'s dtype and device by default."""
    return _finish(_C._functions.empty_strided(list(size), list(stride), dtype=dtype or self.dtype,
                                               device=device or self.device), requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Zeros of ``size`` with ``self``'s dtype and device by default."""
    return _finish(_C._functions.zeros(_size(size), dtype=dtype or self.dtype, device=device or self.device),
                   requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Ones of ``size`` with ``self``'s dtype and device by default."""
    return _finish(_C._functions.ones(_size(size), dtype=dtype or self.dtype, device=device or self.device),
                   requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """``fill_value`` everywhere in a tensor of ``size``, with ``self``'s dtype and device by default."""
    return _finish(_C._functions.full(list(size), fill_value, dtype=dtype or self.dtype,
                                      device=device or self.device), requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of ``data`` (a tensor, a number or nested sequences) with ``self``'s dtype and device by default."""
    if isinstance(data, _C.TensorBase):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        result = data.detach().to(dtype=dtype or self.dtype).clone()
    else:
        result = tensor(data, dtype=dtype or self.dtype, device=device or self.device)
    return _finish(result, requires_grad)
