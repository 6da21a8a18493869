"""The ops whose results are named tuples (torch.return_types): kiln.max, min,
sort, topk, aminmax and their Tensor methods, each the generated op wrapped so a
tuple result comes back as kiln.return_types.<op> (or <op>_out when called with
out=, for the functions)."""

from __future__ import annotations

from kiln import _C, return_types

# kiln.max, kiln.min, ...: the generated functions of kiln._C._functions, wrapped.
max = return_types._named(return_types.max, _C._functions.max, return_types.max_out)  # noqa: A001  (torch's name)
min = return_types._named(return_types.min, _C._functions.min, return_types.min_out)  # noqa: A001
sort = return_types._named(return_types.sort, _C._functions.sort, return_types.sort_out)
topk = return_types._named(return_types.topk, _C._functions.topk, return_types.topk_out)
aminmax = return_types._named(return_types.aminmax, _C._functions.aminmax, return_types.aminmax_out)

# Tensor.max, Tensor.min, ...: the generated methods of kiln._C.TensorBase, wrapped
# (bound by kiln/_tensor_bindings.py).
METHODS = {
    "max": return_types._named(return_types.max, _C.TensorBase.max),
    "min": return_types._named(return_types.min, _C.TensorBase.min),
    "sort": return_types._named(return_types.sort, _C.TensorBase.sort),
    "topk": return_types._named(return_types.topk, _C.TensorBase.topk),
    "aminmax": return_types._named(return_types.aminmax, _C.TensorBase.aminmax),
}
