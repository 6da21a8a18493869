"""kiln.cuda: CUDA is loaded with dlopen at first use (DESIGN.md, decision 6).
The CUDA backend is not built yet, so kiln reports no devices."""


def is_available() -> bool:
    """Whether kiln can use a CUDA device (False until the CUDA backend lands)."""
    return False


def device_count() -> int:
    return 0
