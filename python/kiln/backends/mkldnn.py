"""kiln.backends.mkldnn, as torch.backends.mkldnn: whether oneDNN (kiln's CPU
convolution library) is built, and the ``enabled`` flag (accepted and kept)."""

import sys

from kiln.backends._flags import flags_context

enabled = True
deterministic = False


def is_available() -> bool:
    """True: kiln's CPU convolutions run on oneDNN."""
    return True


def flags(enabled=False, deterministic=False):
    return flags_context(sys.modules[__name__], enabled=enabled, deterministic=deterministic)
