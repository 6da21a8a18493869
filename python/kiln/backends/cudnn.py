"""kiln.backends.cudnn, as torch.backends.cudnn. kiln has no cuDNN: the flags
are accepted and kept (training scripts set ``benchmark``/``deterministic``) and
switch nothing; for determinism use kiln.use_deterministic_algorithms."""

import sys

from kiln.backends._flags import flags_context

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: kiln does not use cuDNN."""
    return False


def version():
    """None: no cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    return flags_context(sys.modules[__name__], enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                         deterministic=deterministic, allow_tf32=allow_tf32)
