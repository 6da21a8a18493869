"""Variable-length sequences, as torch.nn.utils.rnn: PackedSequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence, pad_sequence, unpad_sequence, unpack_sequence.

A PackedSequence stores its sequences time step by time step, longest first:
``data`` holds step 0 of every sequence, then step 1 of those at least two long,
and so on; ``batch_sizes[t]`` says how many sequences step t holds. Sequences
are sorted by decreasing length (``sorted_indices`` maps sorted position to the
caller's batch index, ``unsorted_indices`` back). Packing and unpacking are
index_select / cat of kiln ops, so gradients flow through them; the RNN modules
(nn/modules/rnn.py) run a packed input step by step on the shrinking batch."""

from __future__ import annotations

from typing import NamedTuple

import kiln
from kiln import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    data: object
    batch_sizes: object
    sorted_indices: object = None
    unsorted_indices: object = None

    def to(self, *args, **kwargs):
        """The data moved or converted (Tensor.to's arguments); the bookkeeping stays as it is."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def float(self):
        return self.to(kiln.float32)

    def double(self):
        return self.to(kiln.float64)

    def half(self):
        return self.to(kiln.float16)

    def cpu(self):
        return self

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


PackedSequence.__module__ = "kiln.nn.utils.rnn"


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None stays None)."""
    if permutation is None:
        return None
    output = kiln.empty_like(permutation)
    output.scatter_(0, permutation, kiln.arange(permutation.numel(), dtype=permutation.dtype))
    return output


def _lengths_list(lengths):
    if isinstance(lengths, _C.TensorBase):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T x B x *, or B x T x * with batch_first) of sequences of the given lengths."""
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = list(range(len(lengths)))
    else:
        order = sorted(range(len(lengths)), key=lambda b: -lengths[b])  # stable, as torch's sort
        sorted_indices = kiln.tensor(order, dtype=kiln.int64)
    x = input.transpose(0, 1) if batch_first else input
    batch = x.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if any(n <= 0 for n in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if max(lengths) > x.shape[0]:
        raise RuntimeError(f"Expected every length to be at most the padded length {x.shape[0]}, but got "
                           f"{max(lengths)}")
    sorted_lengths = [lengths[b] for b in order]
    if sorted_indices is not None:
        x = x.index_select(1, sorted_indices)
    batch_sizes = [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])]
    data = kiln.cat([x[t, :size] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, kiln.tensor(batch_sizes, dtype=kiln.int64), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded batch, lengths): the inverse of pack_padded_sequence, in the caller's batch order."""
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {steps}")
    else:
        total_length = steps
    batch = batch_sizes[0] if steps else 0
    data = sequence.data
    rows, start = [], 0
    for size in batch_sizes:
        step = data[start:start + size]
        if size < batch:
            fill = kiln.full((batch - size, *data.shape[1:]), padding_value, dtype=data.dtype)
            step = kiln.cat([step, fill], 0)
        rows.append(step)
        start += size
    for _ in range(total_length - steps):
        rows.append(kiln.full((batch, *data.shape[1:]), padding_value, dtype=data.dtype))
    padded = kiln.stack(rows, 0)
    lengths = kiln.tensor([sum(1 for size in batch_sizes if size > b) for b in range(batch)], dtype=kiln.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """A list of (L_i x *) tensors as one padded (L_max x B x *) tensor (B x L_max x * with batch_first)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.TensorBase):
        sequences = list(sequences.unbind(0))
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = kiln.full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = kiln.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return kiln.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences a padded batch holds, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[b, :n] for b, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of (L_i x *) tensors (longest first unless enforce_sorted is False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
