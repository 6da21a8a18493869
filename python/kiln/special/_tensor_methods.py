"""The Tensor methods kiln.special provides (Tensor.igamma, igamma_, igammac, igammac_ and
polygamma), bound by ``bind``; kiln/__init__.py calls it once.

Imports: kiln._C and kiln.special._gamma only.
"""

from __future__ import annotations

from kiln import _C
from kiln.special import _gamma


def _tensor_polygamma(self, n):
    """Tensor.polygamma(n): kiln.polygamma(n, self)."""
    return _C._functions.polygamma(n, self)


def bind(tensor_class) -> None:
    """Sets the methods the class does not have yet."""
    methods = {"igamma": _gamma.tensor_igamma, "igamma_": _gamma.tensor_igamma_, "igammac": _gamma.tensor_igammac,
               "igammac_": _gamma.tensor_igammac_, "polygamma": _tensor_polygamma}
    for name, method in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, method)
