"""Padding layers over F.pad: ConstantPad, ZeroPad, ReflectionPad,
ReplicationPad and CircularPad in 1, 2 and 3 dims, with torch's padding
arguments (an int for every side, or a tuple per side) and reprs."""

from __future__ import annotations

from kiln.nn import functional as F
from kiln.nn.modules.module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular")
           for n in (1, 2, 3)]


def _sides(padding, n: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"Padding must be an int or a tuple of {2 * n} ints, got {padding}")
    return padding


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        self.padding = _sides(padding, self.dims)
        self.value = value

    def forward(self, input):
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}" if self.mode == "constant" else f"{self.padding}"


def _make(name: str, mode: str, dims: int, constant_value=None):
    def __init__(self, padding, *args, **kwargs):
        if constant_value is not None:  # ZeroPad: no value argument
            _PadNd.__init__(self, padding, 0.0)
        else:
            _PadNd.__init__(self, padding, *args, **kwargs)

    cls = type(name, (_PadNd,), {"mode": mode, "dims": dims, "__init__": __init__, "__module__": __name__})
    if constant_value is not None:
        cls.extra_repr = lambda self: f"{self.padding}"
    return cls


ConstantPad1d, ConstantPad2d, ConstantPad3d = (_make(f"ConstantPad{n}d", "constant", n) for n in (1, 2, 3))
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_make(f"ZeroPad{n}d", "constant", n, 0.0) for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_make(f"ReflectionPad{n}d", "reflect", n) for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_make(f"ReplicationPad{n}d", "replicate", n)
                                                        for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_make(f"CircularPad{n}d", "circular", n) for n in (1, 2, 3))
