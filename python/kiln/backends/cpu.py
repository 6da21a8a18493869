"""kiln.backends.cpu, as torch.backends.cpu."""

from kiln import _C


def get_cpu_capability() -> str:
    """The instruction set kiln's CPU kernels use, in torch's spelling: "DEFAULT", "AVX2" or "AVX512"."""
    return str(_C._cpu_capability()).upper()
