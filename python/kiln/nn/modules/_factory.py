"""Shared helpers of the layer files: factory keyword arguments (device=, dtype=)
and fresh uninitialised parameters, as torch's layers create them."""

from __future__ import annotations

import collections.abc
from itertools import repeat

from kiln import _C
from kiln.nn.parameter import Parameter

__all__ = ["empty_parameter", "factory_kwargs", "ntuple", "single", "pair", "triple"]


def factory_kwargs(device, dtype) -> dict:
    """The keyword arguments a layer passes to the tensors it creates."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise NotImplementedError(f"kiln layers: device '{device}' is not supported yet")
    return {} if dtype is None else {"dtype": dtype}


def empty_parameter(shape, kwargs: dict, requires_grad: bool = True) -> Parameter:
    return Parameter(_C._functions.empty(tuple(shape), **kwargs), requires_grad)


def ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


single = ntuple(1, "_single")
pair = ntuple(2, "_pair")
triple = ntuple(3, "_triple")
