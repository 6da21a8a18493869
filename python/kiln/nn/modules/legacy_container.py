"""kiln.nn.Container: torch's deprecated container (a Module whose keyword
arguments become its child modules), kept for old code."""

from __future__ import annotations

import warnings

from kiln.nn.modules.module import Module

__all__ = ["Container"]


class Container(Module):
    """``Container(**modules)``: warns (FutureWarning, as torch) and adds each keyword as a child module."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
