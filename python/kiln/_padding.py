"""Padding: F.pad in every mode. Constant padding is composed from narrow (negative pads)
and cat (positive pads); reflect / replicate / circular call their C++ op where the build
has one and otherwise index_select along each padded dim (exact in value and gradient).

In the tensor library, not kiln.nn, because torch.stft pads its signal with it (kiln/_stft.py)
as well as kiln.nn.functional, conv3d, the 3-D pools and local_response_norm.
Imports: kiln._C and kiln._creation only.
"""

from __future__ import annotations

from typing import Optional

from kiln import _C
from kiln._arguments import checked_signature
from kiln._creation import tensor


_PAD_OPS = {"reflect": "reflection_pad", "replicate": "replication_pad", "circular": "_pad_circular"}


def _check_pad_dims(input, length: int) -> None:
    """torch's supported (input dims, padding length) pairs for the non-constant modes."""
    k = length // 2
    if input.dim() not in (k + 1, k + 2) or k > 3:
        raise NotImplementedError(
            f"Padding size {length} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_pad_nonempty(input, k: int) -> None:
    """reflect and replicate need every dim but the batch dim non-empty (torch's check and words)."""
    sizes = list(input.shape)
    if 0 in (sizes[1:] if input.dim() == k + 2 else sizes):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {sizes}")


def _pad_by_index(input, pad: list, mode: str):
    """reflect / replicate / circular padding as one index_select per padded dim
    (exact in value and gradient: index_select's backward accumulates with index_add)."""
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = out.shape[dim]
        if mode == "reflect":
            if before >= n or after >= n:
                raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                                   f"{list(input.shape)}")
            index = [-j if j < 0 else (2 * (n - 1) - j if j >= n else j) for j in range(-before, n + after)]
        elif mode == "replicate":
            if n == 0 and before + after > 0:
                raise RuntimeError(f"padding of an empty dimension {dim} of input {list(input.shape)} with mode "
                                   "'replicate'")
            index = [min(max(j, 0), n - 1) for j in range(-before, n + after)]
        else:  # circular: crop the negative pads first, then wrap around the cropped length
            if before > n or after > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            start, stop = max(-before, 0), n - max(-after, 0)
            m = stop - start
            index = [start + j % m for j in range(-max(before, 0), m + max(after, 0))] if m > 0 else []
        out = out.index_select(dim, _index_tensor(index))
    return out


def _index_tensor(values: list):
    return tensor(values, dtype=_C.int64)


@checked_signature("pad(Tensor input)")
def pad(input, pad: list, mode: str = "constant", value: Optional[float] = None):
    """Constant padding composed from narrow (negative pads) and cat (positive pads);
    the other modes need their ops."""
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode != "constant":
        if mode not in _PAD_OPS:
            raise NotImplementedError(f"Unrecognised padding mode {mode}")
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        _check_pad_dims(input, len(pad))
        if mode != "circular":
            _check_pad_nonempty(input, len(pad) // 2)
        op = f"{_PAD_OPS[mode]}{len(pad) // 2}d"
        fn = getattr(_C._functions, op, None)
        if fn is not None:
            return fn(input, list(pad))
        return _pad_by_index(input, [int(p) for p in pad], mode)
    fill = 0.0 if value is None else value
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if before < 0:
            out = out.narrow(dim, -before, out.shape[dim] + before)
        if after < 0:
            out = out.narrow(dim, 0, out.shape[dim] + after)
        pieces = []
        for amount in (before, after):
            shape = list(out.shape)
            shape[dim] = max(amount, 0)
            pieces.append(_C._functions.full(tuple(shape), fill, dtype=out.dtype))
        if before > 0 or after > 0:
            out = _C._functions.cat([pieces[0], out, pieces[1]], dim)
    return out

