"""The Tensor methods kiln.nn provides (Tensor.hardshrink, Tensor.prelu), bound by ``bind``.

kiln/__init__.py calls bind(Tensor) once; the methods are the F functions themselves
under their Tensor spelling. Imports: kiln.nn._activations only.
"""

from __future__ import annotations

from kiln.nn._activations import hardshrink, prelu


def _tensor_hardshrink(self, lambd=0.5):
    """Tensor.hardshrink: F.hardshrink(self, lambd)."""
    return hardshrink(self, lambd)


def _tensor_prelu(self, weight):
    """Tensor.prelu: F.prelu(self, weight)."""
    return prelu(self, weight)


def bind(tensor_class) -> None:
    """Sets Tensor.hardshrink and Tensor.prelu (where the class has none of its own)."""
    for name, method in (("hardshrink", _tensor_hardshrink), ("prelu", _tensor_prelu)):
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, method)
