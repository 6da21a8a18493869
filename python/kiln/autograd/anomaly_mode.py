"""Anomaly detection: nodes remember where they were created, and errors in
backward name the forward op; NaN gradients raise."""

from __future__ import annotations

from kiln import _C

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class detect_anomaly:
    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _C.is_anomaly_enabled()

    def __enter__(self) -> None:
        _C._set_anomaly_enabled(True)

    def __exit__(self, *exc) -> None:
        _C._set_anomaly_enabled(self.prev)


class set_detect_anomaly:
    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _C._set_anomaly_enabled(self.prev)
