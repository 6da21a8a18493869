"""PyTorch's alias names (torch.multiply for torch.mul, torch.arcsin for
torch.asin, ...): each runs through the op it names, as PyTorch's
CompositeImplicit aliases do, so gradients, out= and errors are that op's.
Also torch.positive, and the torch-level spellings of Tensor in-place methods
(torch.arccos_, torch.clamp_, ...: ``input.<name>(...)``).

FUNCTIONS holds the kiln-level forms and METHODS the Tensor method and in-place
forms; kiln/__init__.py and kiln/_tensor_bindings.py put them in place."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature

# alias -> the op it names; each has function, method and in-place forms in torch.
ALIASES = {
    "multiply": "mul", "subtract": "sub", "divide": "div",
    "greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "arctan2": "atan2",
}
# Function-only aliases.
FUNCTION_ALIASES = {"row_stack": "vstack"}
# torch-level spellings of Tensor in-place methods.
INPLACE_FUNCTIONS = ("arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "clamp_", "clamp_max_",
                     "clamp_min_", "clip_", "sinc_", "xlogy_")


def _function(alias, op):
    target = getattr(_C._functions, op)

    def alias_function(*args, **kwargs):
        return target(*args, **kwargs)

    alias_function.__name__ = alias
    alias_function.__doc__ = f"Alias for ``{op}``."
    return alias_function


def _method(alias, op):
    def alias_method(self, *args, **kwargs):
        return getattr(self, op)(*args, **kwargs)

    alias_method.__name__ = alias
    alias_method.__doc__ = f"Alias for ``Tensor.{op}``."
    return alias_method


def _forward_to_method(name):
    def function(input, *args, **kwargs):
        _require_tensor(input, name)
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}: ``input.{name}(...)``."
    return function


@checked_signature("positive(Tensor input)")
def positive(input):
    """``input`` itself (unary plus); an error for bool tensors, as in PyTorch."""
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


FUNCTIONS = {alias: _function(alias, op) for alias, op in {**ALIASES, **FUNCTION_ALIASES}.items()}
FUNCTIONS.update({name: _forward_to_method(name) for name in INPLACE_FUNCTIONS})
FUNCTIONS["positive"] = positive

METHODS = {alias + suffix: _method(alias + suffix, op + suffix)
           for alias, op in ALIASES.items() for suffix in ("", "_")}
METHODS["positive"] = positive
