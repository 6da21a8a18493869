"""PyTorch's alias names (torch.multiply for torch.mul, torch.arcsin for
torch.asin, ...): each runs through the op it names, as PyTorch's
CompositeImplicit aliases do, so gradients, out= and errors are that op's.
`install` adds the function forms to the kiln namespace and the method and
in-place forms to Tensor, only where kiln has no op of that name already."""

from __future__ import annotations

# alias -> the op it names; each has function, method and in-place forms in torch.
ALIASES = {
    "multiply": "mul", "subtract": "sub", "divide": "div",
    "greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "arctan2": "atan2",
}
# Function-only aliases.
FUNCTION_ALIASES = {"row_stack": "vstack"}


def _function(target):
    def alias(*args, **kwargs):
        return target(*args, **kwargs)

    return alias


def _method(name):
    def alias(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)

    return alias


def install(namespace: dict, tensor_class) -> None:
    for alias, op in {**ALIASES, **FUNCTION_ALIASES}.items():
        if alias not in namespace and op in namespace:
            function = _function(namespace[op])
            function.__name__ = alias
            function.__doc__ = f"Alias for ``{op}``."
            namespace[alias] = function
    for alias, op in ALIASES.items():
        for suffix in ("", "_"):
            if not hasattr(tensor_class, alias + suffix) and hasattr(tensor_class, op + suffix):
                method = _method(op + suffix)
                method.__name__ = alias + suffix
                method.__doc__ = f"Alias for ``Tensor.{op + suffix}``."
                setattr(tensor_class, alias + suffix, method)

    def positive(input):
        """``input`` itself (unary plus); an error for bool tensors, as in PyTorch."""
        if input.dtype == namespace["bool"]:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return input

    namespace.setdefault("positive", positive)
    if not hasattr(tensor_class, "positive"):
        tensor_class.positive = positive
