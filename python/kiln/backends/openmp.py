"""kiln.backends.openmp, as torch.backends.openmp: kiln's threads are TBB's."""


def is_available() -> bool:
    return False
