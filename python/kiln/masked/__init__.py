"""torch.masked: masked reductions and normalisations (kiln/masked/README.md)."""

from kiln.masked._mask import _input_mask, _output_mask, as_masked_tensor, is_masked_tensor, masked_tensor
from kiln.masked._ops import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean,
                              median, norm, normalize, prod, softmax, softmin, std, sum, var)

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum", "is_masked_tensor",
           "log_softmax", "logaddexp", "logsumexp", "masked_tensor", "mean", "median", "norm", "normalize", "prod",
           "softmax", "softmin", "std", "sum", "var"]
