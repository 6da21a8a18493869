"""kiln.nn.factory_kwargs: torch.nn.factory_kwargs, the canonical dict of factory
keyword arguments (device, dtype, memory_format) a layer passes to tensor factories."""

from __future__ import annotations

__all__ = ["factory_kwargs"]

_SIMPLE_KEYS = ("device", "dtype", "memory_format")


def factory_kwargs(kwargs) -> dict:
    """``kwargs`` (None or a dict) checked and flattened: its device / dtype /
    memory_format, merged with an explicit ``factory_kwargs`` entry (a key may
    come from only one of the two). Unknown keys raise TypeError, as in torch."""
    if kwargs is None:
        return {}
    expected = set(_SIMPLE_KEYS) | {"factory_kwargs"}
    unexpected = kwargs.keys() - expected
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in _SIMPLE_KEYS:
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
