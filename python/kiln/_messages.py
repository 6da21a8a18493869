"""The spellings torch's error messages use: C++ type words ("float", "long int"),
ScalarType names ("Float", "Long"), doubles as C++ prints them, TensorOptions text."""

from __future__ import annotations

from kiln._comparison import scalar_type_name


def _type_word(dtype) -> str:
    """The C++ type name torch's messages print for a dtype ("float", "long int", ...)."""
    words = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool"}
    name = str(dtype).removeprefix("kiln.")
    return words.get(name, name)


def _scalar_name(dtype) -> str:
    """torch's ScalarType name ("Float", "Long", ...)."""
    return scalar_type_name(dtype)


def _format_double(value) -> str:
    """A double as C++'s ostream prints it (6 significant digits)."""
    return format(float(value), "g")


def _options_text(dtype) -> str:
    return (f"TensorOptions(dtype={_type_word(dtype)}, device=cpu, layout=Strided, requires_grad=false (default), "
            "pinned_memory=false (default), memory_format=(nullopt))")
