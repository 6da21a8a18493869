"""Named tuples for ops with several results (like torch.return_types):
``values, indices = x.max(dim)`` and ``x.max(dim).values`` both work. An out=
call returns torch's ``<op>_out`` type instead (torch.return_types.sort_out),
whose members are the out tensors passed in."""

from __future__ import annotations

from kiln._arguments import checked_signature
import inspect
from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001  (torch's name)
min = namedtuple("min", ["values", "indices"])  # noqa: A001
aminmax = namedtuple("aminmax", ["min", "max"])
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
max_out = namedtuple("max_out", ["values", "indices"])
min_out = namedtuple("min_out", ["values", "indices"])
aminmax_out = namedtuple("aminmax_out", ["min", "max"])
sort_out = namedtuple("sort_out", ["values", "indices"])
topk_out = namedtuple("topk_out", ["values", "indices"])

for _cls in (max, min, aminmax, sort, topk, max_out, min_out, aminmax_out, sort_out, topk_out):
    _cls.__module__ = "kiln.return_types"


def _named(result_type, fn, out_type=None):
    """fn with tuple results wrapped in result_type, or in out_type when called
    with out= (single tensors pass through)."""

    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        if not isinstance(result, tuple):
            return result
        if out_type is not None and kwargs.get("out") is not None:
            return out_type(*result)
        return result_type(*result)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    # A plain function's __text_signature__ is read literally, so a builtin's
    # "($module, ...)" would show a 'module' parameter: resolve it on fn itself.
    try:
        wrapper.__signature__ = inspect.signature(fn)
    except (TypeError, ValueError):
        pass
    return wrapper
