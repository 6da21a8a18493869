"""Named tuples for ops with several results (like torch.return_types):
``values, indices = x.max(dim)`` and ``x.max(dim).values`` both work."""

from __future__ import annotations

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001  (torch's name)
min = namedtuple("min", ["values", "indices"])  # noqa: A001
aminmax = namedtuple("aminmax", ["min", "max"])

for _cls in (max, min, aminmax):
    _cls.__module__ = "kiln.return_types"


def _named(result_type, fn):
    """fn with tuple results wrapped in result_type (single tensors pass through)."""

    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        return result_type(*result) if isinstance(result, tuple) else result

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__text_signature__ = getattr(fn, "__text_signature__", None)
    return wrapper
