"""torch.distributed's error classes (all RuntimeErrors)."""

__all__ = ["DistBackendError", "DistError", "DistStoreError"]


class DistError(RuntimeError):
    """torch.distributed.DistError: the base of the errors below."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError."""


class DistStoreError(DistError):
    """torch.distributed.DistStoreError."""
