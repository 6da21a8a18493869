"""Export's mode: torch.onnx.TrainingMode, OperatorExportTypes, select_model_mode_for_export and whether an
export is running (is_in_onnx_export)."""

from __future__ import annotations

import contextlib
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


class OperatorExportTypes(enum.IntEnum):
    """torch.onnx.OperatorExportTypes: accepted by export; kiln writes standard ONNX operators only."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


@contextlib.contextmanager
def select_model_mode_for_export(model, mode: TrainingMode):
    """Sets ``model``'s train/eval flags for ``mode`` (PRESERVE leaves them) and restores them on exit."""
    flags = [(m, m.training) for m in model.modules()]
    try:
        if mode != TrainingMode.PRESERVE:
            model.train(mode == TrainingMode.TRAINING)
        yield
    finally:
        for m, flag in flags:
            m.training = flag
