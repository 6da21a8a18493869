"""kiln.onnx: export a model to ONNX (torch.onnx.export's TorchScript-exporter form) from kiln's captured IR.
See README.md. The ``onnx`` package is imported by the first export, so ``import kiln`` never needs it."""

from kiln.onnx._errors import OnnxExporterError, UnsupportedOperatorError
from kiln.onnx._mode import TrainingMode, is_in_onnx_export


def export(model, args=(), f=None, **options):
    """torch.onnx.export: see kiln.onnx._export.export (which needs the ``onnx`` package)."""
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise ModuleNotFoundError("kiln.onnx.export needs the onnx package (pip install onnx)") from e
    from kiln.onnx._export import export as export_to_onnx

    return export_to_onnx(model, args, f, **options)


__all__ = ["OnnxExporterError", "TrainingMode", "UnsupportedOperatorError", "export", "is_in_onnx_export"]
