"""kiln.onnx: export a model to ONNX (torch.onnx.export's TorchScript-exporter form) from kiln's captured IR.
See README.md. The ``onnx`` package is imported by the first export, so ``import kiln`` never needs it."""

from kiln._version import __version__
from kiln.onnx import errors
from kiln.onnx._mode import OperatorExportTypes, TrainingMode, is_in_onnx_export, select_model_mode_for_export
from kiln.onnx.errors import OnnxExporterError, UnsupportedOperatorError

producer_name = "kiln"
producer_version = __version__


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=False, external_data=True, dynamic_shapes=None,
           custom_translation_table=None, report=False, optimize=True, verify=False, profile=False,
           dump_exported_program=False, artifacts_dir=".", export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, training=TrainingMode.EVAL, operator_export_type=None, do_constant_folding=True,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True):
    """Exports ``model`` (an nn.Module or a function) called on ``args`` to ONNX, written to ``f`` (a path or a
    binary file object), as torch.onnx.export. The forward is captured by kiln.compile's capture (the model in
    eval mode unless ``training``; its train/eval flags restored after) and each recorded op is written as
    ONNX operators (parameters and buffers as initializers named by their qualified names).
    ``dynamic_axes``: ``{input or output name: {axis: name}}`` or ``{name: [axes]}`` marks those sizes symbolic
    (Note [Dynamic axes by recapture]). ``dynamo``, ``optimize``, ``do_constant_folding`` and the other
    exporter-selection and reporting options are accepted and have no effect: there is one exporter.
    Raises UnsupportedOperatorError naming an op with no ONNX mapping. Returns None."""
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise ModuleNotFoundError("kiln.onnx.export needs the onnx package (pip install onnx)") from e
    from kiln.onnx._export import export_model

    return export_model(model, args, f, kwargs=kwargs, verbose=verbose, input_names=input_names,
                        output_names=output_names, opset_version=opset_version, dynamic_shapes=dynamic_shapes,
                        export_params=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs,
                        dynamic_axes=dynamic_axes, training=training)


__all__ = ["OnnxExporterError", "OperatorExportTypes", "TrainingMode", "UnsupportedOperatorError", "errors", "export",
           "is_in_onnx_export", "producer_name", "producer_version", "select_model_mode_for_export"]
