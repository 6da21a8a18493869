"""torch.hash_tensor: the xor of the elements' 64-bit patterns, over all dims or some.

Each element is widened to 64 bits as torch does (floating types to float64, the rest to
int64) and its bits are xor-ed; kiln has no uint64, so the hash is an int64 tensor holding
the same 64 bits as torch's uint64 result.
"""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature

_F = _C._functions


def _bits(input):
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{_complex_name(input.dtype)}'")
    if input.dtype.is_floating_point:
        return input.to(_C.float64).view(_C.int64)
    return input.to(_C.int64)


def _complex_name(dtype):
    return "ComplexFloat" if dtype == _C.complex64 else "ComplexDouble"


def _xor_along(x, dim: int):
    """x xor-reduced along dim, kept as size 1 (a fold of halves: log2(n) ops)."""
    while x.shape[dim] > 1:
        size = x.shape[dim]
        half = size // 2
        folded = _F.bitwise_xor(x.narrow(dim, 0, half), x.narrow(dim, half, half))
        if size % 2:
            first = _F.bitwise_xor(folded.narrow(dim, 0, 1), x.narrow(dim, size - 1, 1))
            folded = _F.cat([first, folded.narrow(dim, 1, half - 1)], dim)
        x = folded
    return x


@checked_signature("hash_tensor(Tensor input, int[1] dim, *, bool keepdim, int mode)")
def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """The xor of input's elements' 64-bit patterns over ``dim`` (all dims when None or ())."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    ndim = input.dim()
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        if input.numel() == 0:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        dims = list(range(ndim))
    else:
        dims = []
        for d in (dim,) if isinstance(dim, int) else dim:
            if not -max(ndim, 1) <= d < max(ndim, 1):
                raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                                 f"{max(ndim, 1) - 1}], but got {d})")
            dims.append(d % max(ndim, 1))
        dims = sorted(set(dims))
    x = _bits(input)
    for d in dims:
        if ndim and x.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
        if ndim:
            x = _xor_along(x, d)
    if not keepdim and ndim:
        for d in reversed(dims):
            x = x.squeeze(d)
    return x.clone() if x is input else x
