"""F.grouped_mm (torch 2.13): a matrix product per group, for Mixture-of-Experts layers,
with torch's CPU checks and words. Re-exported by kiln.nn.functional.

The four forms, G groups, ``offs`` the int32 ends of the jagged groups:
  3-D [G, M, K] @ 3-D [G, K, N] -> [G, M, N]  (a batched product, no offs);
  2-D [M, K] @ 3-D [G, K, N] -> [M, N]        (rows offs[i-1]:offs[i] use weight i);
  3-D [G, M, K] @ 2-D [K, N] -> [M, N]        (columns offs[i-1]:offs[i] use input i);
  2-D [M, K] @ 2-D [K, N] -> [G, M, N]        (group i contracts K over offs[i-1]:offs[i]).
Groups are written in order, so a later group overwrites an earlier one where
decreasing offsets make them overlap, as torch's loop does. Rows or columns past
offs[-1] are zeros here; torch leaves them uninitialised. Every step is an
ordinary op (mm, bmm, slice writes), so gradients flow; torch's own CPU backward
fails for the 3-D form ("Invalid strides/sizes").
"""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_tensor
from kiln._comparison import scalar_type_name

_FLOATS = ("float32", "bfloat16", "float16")


def _check(mat_a, mat_b, offs, bias, out_dtype):
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if mat.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if str(mat.dtype).removeprefix("kiln.") not in _FLOATS:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{scalar_type_name(mat.dtype)}")
    if (offs is None) != (mat_a.dim() == 3 and mat_b.dim() == 3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is not None and offs.dtype != _C.int32:
        raise RuntimeError("Offsets have to be int32")
    if mat_a.dim() == 3 and mat_b.dim() == 3 and mat_a.shape[0] != mat_b.shape[0]:
        raise RuntimeError("batched dimension has to match")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"grouped_mm: mat_a and mat_b must have the same dtype, got "
                           f"{scalar_type_name(mat_a.dtype)} and {scalar_type_name(mat_b.dtype)}")


def _groups(offs):
    """(group, start, end) for each non-empty group, starting where the previous offset ended."""
    start = 0
    for group, end in enumerate(offs.tolist()):
        if end > start:
            yield group, start, end
        start = end


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None): see the module docstring."""
    _require_tensor(mat_a, "_grouped_mm", "input", 1)
    _require_tensor(mat_b, "_grouped_mm", "mat2", 2)
    _check(mat_a, mat_b, offs, bias, out_dtype)
    f = _C._functions
    if offs is None:
        return f.bmm(mat_a, mat_b)
    if mat_a.dim() == 2 and mat_b.dim() == 3:
        out = f.zeros((mat_a.shape[0], mat_b.shape[2]), dtype=mat_a.dtype)
        for group, start, end in _groups(offs):
            out[start:end] = f.mm(mat_a[start:end], mat_b[group])
        return out
    if mat_a.dim() == 3:
        out = f.zeros((mat_a.shape[1], mat_b.shape[1]), dtype=mat_a.dtype)
        for group, start, end in _groups(offs):
            out[:, start:end] = f.mm(mat_a[group], mat_b[:, start:end])
        return out
    out = f.zeros((offs.numel(), mat_a.shape[0], mat_b.shape[1]), dtype=mat_a.dtype)
    for group, start, end in _groups(offs):
        out[group] = f.mm(mat_a[:, start:end], mat_b[start:end])
    return out
