"""The ops whose results are named tuples (torch.return_types): kiln.max, min,
sort, topk, aminmax and their Tensor methods, each the generated op wrapped so a
tuple result comes back as kiln.return_types.<op> (or <op>_out when called with
out=, for the functions)."""

from __future__ import annotations

from kiln import _C, return_types
from kiln._arguments import checked_signature



def _tensor_other_first(fn, binary):
    """fn, except that a Tensor second argument takes the binary overload (max.other, min.other) as
    in torch: the generated binding tries max.dim first and would read a 0-dim integer tensor as
    the dim (a tensor's __index__)."""
    def wrapper(*args, **kwargs):
        if len(args) == 2 and isinstance(args[1], _C.TensorBase) and not kwargs.keys() - {"out"}:
            return binary(*args, **kwargs)
        if len(args) == 1 and isinstance(kwargs.get("other"), _C.TensorBase) and not kwargs.keys() - {"other", "out"}:
            return binary(args[0], kwargs.pop("other"), **kwargs)
        return fn(*args, **kwargs)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    if hasattr(fn, "__signature__"):
        wrapper.__signature__ = fn.__signature__
    return wrapper


# kiln.max, kiln.min, ...: the generated functions of kiln._C._functions, wrapped.
max = _tensor_other_first(return_types._named(return_types.max, _C._functions.max, return_types.max_out),  # noqa: A001
                          _C._functions.maximum)
min = _tensor_other_first(return_types._named(return_types.min, _C._functions.min, return_types.min_out),  # noqa: A001
                          _C._functions.minimum)
sort = return_types._named(return_types.sort, _C._functions.sort, return_types.sort_out)
topk = return_types._named(return_types.topk, _C._functions.topk, return_types.topk_out)
aminmax = return_types._named(return_types.aminmax, _C._functions.aminmax, return_types.aminmax_out)

# Tensor.max, Tensor.min, ...: the generated methods of kiln._C.TensorBase, wrapped
# (bound by kiln/_tensor_bindings.py).
METHODS = {
    "max": _tensor_other_first(return_types._named(return_types.max, _C.TensorBase.max), _C.TensorBase.maximum),
    "min": _tensor_other_first(return_types._named(return_types.min, _C.TensorBase.min), _C.TensorBase.minimum),
    "sort": return_types._named(return_types.sort, _C.TensorBase.sort),
    "topk": return_types._named(return_types.topk, _C.TensorBase.topk),
    "aminmax": return_types._named(return_types.aminmax, _C.TensorBase.aminmax),
}
