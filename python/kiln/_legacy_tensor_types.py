"""torch's legacy typed tensor constructors (kiln.FloatTensor, kiln.LongTensor, ...):
``FloatTensor(2, 3)`` is uninitialised, ``FloatTensor([1, 2])`` copies data,
``FloatTensor()`` is empty, as Tensor.new on a float32 tensor; and
``isinstance(t, kiln.FloatTensor)`` asks whether t is a CPU float32 tensor. What
they build is a plain kiln.Tensor, as in torch."""

from __future__ import annotations

from kiln import _C
from kiln._legacy_methods import new

_TYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8",
    "BoolTensor": "bool",
}

__all__ = list(_TYPES)


class _LegacyTensorType(type):
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, _C.TensorBase) and instance.dtype is cls.dtype and instance.device.type == "cpu"

    def __call__(cls, *args, device=None):
        return new(_C._functions.empty([0], dtype=cls.dtype), *args, device=device)

    def __repr__(cls) -> str:
        return f"<class 'kiln.{cls.__name__}'>"


def _make(name: str, dtype_name: str):
    return _LegacyTensorType(name, (), {"dtype": getattr(_C, dtype_name), "is_cuda": False, "is_sparse": False,
                                        "__module__": "kiln", "__doc__": f"kiln.{name}: {dtype_name} tensors."})


FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, \
    BoolTensor = (_make(name, dtype) for name, dtype in _TYPES.items())
