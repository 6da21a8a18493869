"""The ONNX graph under construction: nodes, initializers and constants with
unique names, symbolic sizes turned into int64 tensors, and the types kiln's
graph gives each value (dtype and sizes, read from the captured text)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln.onnx._symbolic import SymInt

# kiln dtype names (the text form's, through _graph_text) -> ONNX element types.
ONNX_DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
               "bfloat16": TensorProto.BFLOAT16, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
               "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
               "bool": TensorProto.BOOL, "complex64": TensorProto.COMPLEX64,
               "complex128": TensorProto.COMPLEX128}
NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
                "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")


class Builder:
    """Emits ONNX nodes. ``op(type, inputs, **attrs)`` -> the output's name (``outputs=k``: a list of k names)."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self._used: set = set()
        self._constants: dict = {}
        self.symbols: dict = {}  # symbol name -> (graph input name, axis): where a dynamic size is read
        self._symbol_values: dict = {}

    def fresh(self, hint: str) -> str:
        base = hint.replace("::", "_").replace(".", "_") or "v"
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> str:
        """Claims an exact name (a graph input, output or initializer named by the user or a parameter)."""
        if name in self._used:
            raise ValueError(f"kiln.onnx.export: the name {name!r} is used twice")
        self._used.add(name)
        return name

    def op(self, op_type: str, inputs: list, outputs: int | list | None = None, **attrs):
        names = outputs if isinstance(outputs, list) else [self.fresh(op_type) for _ in range(outputs or 1)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, [i if i is not None else "" for i in inputs], names,
                                           name=self.fresh(f"n_{op_type}"), **attrs))
        return names if (isinstance(outputs, list) or (outputs or 1) > 1) else names[0]

    def add_initializer(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def constant(self, value, dtype: str) -> str:
        """An initializer holding ``value`` (a scalar or nested list / array) as ``dtype``, shared by equal values."""
        array = np.asarray(value, dtype=NUMPY_DTYPES[dtype])
        key = (dtype, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self.add_initializer(self.fresh("const"), array)
        return self._constants[key]

    def ints(self, values) -> str:
        """A 1-D int64 tensor of ``values``, where entries may be SymInts (read from the inputs' shapes at run time)."""
        values = list(values)
        if not any(isinstance(v, SymInt) for v in values):
            return self.constant(np.asarray(values, dtype=np.int64).reshape(len(values)), "int64")
        parts, run = [], []
        for v in values:
            if isinstance(v, SymInt):
                if run:
                    parts.append(self.constant(run, "int64"))
                    run = []
                parts.append(self.sym_int(v))
            else:
                run.append(int(v))
        if run:
            parts.append(self.constant(run, "int64"))
        return parts[0] if len(parts) == 1 else self.op("Concat", parts, axis=0)

    def scalar_int(self, value) -> str:
        """A 1-element int64 tensor of ``value`` (an int or a SymInt)."""
        return self.ints([value])

    def symbol(self, name: str) -> str:
        """The 1-element int64 tensor holding dynamic size ``name`` at run time."""
        if name not in self._symbol_values:
            source, axis = self.symbols[name]
            shape = self.op("Shape", [source], start=axis, end=axis + 1)
            self._symbol_values[name] = shape
        return self._symbol_values[name]

    def sym_int(self, v: SymInt) -> str:
        result = None
        for s in v.symbols:
            term = self.symbol(s)
            result = term if result is None else self.op("Mul", [result, term])
        if v.scale != 1:
            result = self.op("Mul", [result, self.constant([v.scale], "int64")])
        if v.offset != 0:
            result = self.op("Add", [result, self.constant([v.offset], "int64")])
        return result

    def cast(self, name: str, from_dtype: str | None, to_dtype: str) -> str:
        if from_dtype == to_dtype:
            return name
        return self.op("Cast", [name], to=ONNX_DTYPES[to_dtype])


def value_info(name: str, dtype: str, sizes) -> onnx.ValueInfoProto:
    """A graph input or output's declared type: ``sizes`` entries are ints or dim_param strings."""
    return helper.make_tensor_value_info(name, ONNX_DTYPES[dtype], list(sizes) if sizes is not None else None)
