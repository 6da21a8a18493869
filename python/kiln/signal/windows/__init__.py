"""torch.signal.windows: window functions as torch computes them (kiln/signal/README.md)."""

from kiln.signal.windows.windows import (bartlett, blackman, cosine, exponential, gaussian, general_cosine,
                                         general_hamming, hamming, hann, kaiser, nuttall)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
