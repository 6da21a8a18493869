"""kiln.backends.mps, as torch.backends.mps: kiln has no Metal backend."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False
