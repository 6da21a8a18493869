"""kiln.onnx.errors (torch.onnx.errors): the export errors."""


class OnnxExporterError(RuntimeError):
    """A model kiln.onnx.export cannot write as ONNX."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op with no ONNX mapping (the message names it and the statement of the captured graph), a graph break,
    or a forward that is not deterministic and functional."""
