"""kiln.testing: torch.testing's assert_close, make_tensor and the deprecated
assert_allclose, for kiln tensors.

What matches torch 2.13: the comparison rules (per-dtype default tolerances,
equal_nan, the check_* flags, nested sequences and mappings, Python and numpy
scalars, numpy arrays), the exception types and the messages word for word
with "kiln" where torch says "torch"; make_tensor's per-dtype value ranges,
clamping, errors and memory layouts.

Knowingly left out: torch.testing.FileCheck (TorchScript's IR checker; kiln
has no TorchScript), and the sparse, quantized, meta and DTensor branches
(kiln has none of those tensors).
"""

from kiln.testing._comparison import assert_allclose, assert_close
from kiln.testing._creation import make_tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]
