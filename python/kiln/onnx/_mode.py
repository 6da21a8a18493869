"""Export's mode: torch.onnx.TrainingMode and whether an export is running (is_in_onnx_export)."""

from __future__ import annotations

import enum

_exporting = [False]


class TrainingMode(enum.IntEnum):
    """torch.onnx.TrainingMode: the mode a model is exported in."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export() -> bool:
    """True while kiln.onnx.export is capturing a model."""
    return _exporting[0]
