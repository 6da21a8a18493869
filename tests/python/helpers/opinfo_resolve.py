"""Which kiln callable runs each entry of PyTorch's OpInfo database.

An OpInfo names its operator by its torch path ("nn.functional.conv2d", "linalg.svd",
"__radd__"); kiln's callable is the attribute at the same path under ``kiln``, else
the Tensor method of that name. An OpInfo whose op is a wrapper written in torch's
test code (a lambda calling ``torch.x`` or a tensor method) runs on kiln through
``read_torch_as_kiln``: the same function with its global ``torch`` bound to kiln.
"""

from __future__ import annotations

import types

import torch

import kiln


def opinfo_key(opinfo) -> str:
    """The name the suite and the known-differences table give an OpInfo: name[.variant]."""
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def read_torch_as_kiln(fn):
    """``fn`` (a Python function from torch's test code) with its global ``torch`` read as kiln.

    Functions from torch's own package (torch.nn.functional, torch.functional) are not
    rebound: their kiln counterparts are found by name instead."""
    if not isinstance(fn, types.FunctionType) or not fn.__module__.startswith("torch.testing"):
        return fn
    bound_globals = dict(fn.__globals__)
    bound_globals["torch"] = kiln
    rebound = types.FunctionType(fn.__code__, bound_globals, fn.__name__, fn.__defaults__, fn.__closure__)
    rebound.__kwdefaults__ = fn.__kwdefaults__
    return rebound


def _attribute_path(root, dotted: str):
    value = root
    for part in dotted.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _tensor_method(name: str):
    """Tensor.name called as torch calls the unbound method: on a tensor, or a TypeError."""
    if getattr(kiln.Tensor, name, None) is None:
        return None

    def method(self, *args, **kwargs):
        if not isinstance(self, kiln.Tensor):
            raise TypeError(f"descriptor '{name}' for 'kiln.Tensor' objects doesn't apply to a "
                            f"'{type(self).__name__}' object")
        return getattr(self, name)(*args, **kwargs)
    return method


def kiln_callable(opinfo):
    """kiln's callable for the OpInfo, or None where kiln has no such op."""
    op = opinfo.op
    if isinstance(op, types.FunctionType) and op.__module__.startswith("torch.testing"):
        return read_torch_as_kiln(op)
    if isinstance(op, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return _tensor_method(op.__name__)
    found = _attribute_path(kiln, opinfo.name)
    if getattr(found, "not_implemented_reason", None):  # an entry point that only refuses (kiln.sparse.*)
        return None
    if found is not None and callable(found):
        return found
    if opinfo.method_variant is not None or "." not in opinfo.name:
        return _tensor_method(opinfo.name.rsplit(".", 1)[-1])
    return None


def is_missing_attribute(error: BaseException) -> bool:
    """The error says a kiln module or Tensor lacks an attribute (a wrapper reached an op kiln lacks),
    or a kiln entry point refuses what kiln has no counterpart of ("kiln has no sparse layouts",
    "kiln has no complex32"): the op counts as missing."""
    if isinstance(error, NotImplementedError) and "kiln has no " in str(error):
        return True
    if not isinstance(error, AttributeError):
        return False
    text = str(error)
    return "kiln" in text or "'Tensor' object has no attribute" in text or "'_OpNamespace'" in text


# Words in torch's own skip reasons that say an op's values are not comparable run to run.
_UNCOMPARABLE = ("not comparable", "nondeterministic", "non-deterministic", "uninitialized", "random")


def skip_reasons(opinfo) -> list:
    """The reasons of the unittest.skip decorators an OpInfo carries (torch's own skips)."""
    reasons = []
    for info in opinfo.decorators:
        for decorator in getattr(info, "decorators", ()):
            for cell in getattr(decorator, "__closure__", None) or ():
                try:
                    contents = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(contents, str):
                    reasons.append(contents)
    return reasons


def values_uncomparable(opinfo) -> bool:
    """torch's own OpInfo skips a test because the op's values are not comparable (empty, random ops)."""
    return any(word in reason.lower() for reason in skip_reasons(opinfo) for word in _UNCOMPARABLE)


def torch_value_is_random(first, second) -> bool:
    """Two torch results of the same call under different seeds differ: the op draws random numbers
    (or returns uninitialised memory), so only shapes and dtypes are comparable."""
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
        if first.shape != second.shape or first.dtype != second.dtype:
            return True
        first, second = first.detach().resolve_conj(), second.detach().resolve_conj()
        if first.is_floating_point() or first.is_complex():
            return not torch.allclose(first, second, rtol=0, atol=0, equal_nan=True)
        return not torch.equal(first, second)
    if isinstance(first, (tuple, list)) and isinstance(second, (tuple, list)) and len(first) == len(second):
        return any(torch_value_is_random(a, b) for a, b in zip(first, second))
    return False
