"""kiln.ops: every dispatcher operator by name, ``kiln.ops.ns.name(...)``, called
through the boxed path (custom ops and built-ins alike)."""

from __future__ import annotations

from kiln import _C


class OpOverloadPacket:
    """All overloads of ``ns::name``; a call picks the first whose schema binds."""

    def __init__(self, qualname: str):
        self._qualname = qualname
        self.__name__ = qualname.split("::", 1)[1]

    def __call__(self, *args, **kwargs):
        return _C._call_op(self._qualname, args, kwargs)

    def __getattr__(self, overload: str) -> "OpOverload":
        if overload.startswith("__"):
            raise AttributeError(overload)
        name = "" if overload == "default" else overload
        return OpOverload(self._qualname, name)

    @property
    def schemas(self) -> list[str]:
        return _C._op_schemas(self._qualname)

    def __repr__(self) -> str:
        return f"kiln.ops.{self._qualname.replace('::', '.')}"


class OpOverload:
    """One overload, ``kiln.ops.kiln.add.Tensor``."""

    def __init__(self, qualname: str, overload: str):
        self._qualname = qualname
        self._overload = overload

    def __call__(self, *args, **kwargs):
        name = f"{self._qualname}.{self._overload}" if self._overload else self._qualname
        return _C._call_op(name, args, kwargs)


class _OpNamespace:
    def __init__(self, ns: str):
        self._ns = ns

    def __getattr__(self, name: str) -> OpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        qualname = f"{self._ns}::{name}"
        if not _C._op_exists(qualname):
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")
        return OpOverloadPacket(qualname)


class _Ops:
    def __getattr__(self, ns: str) -> _OpNamespace:
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _OpNamespace(ns)


ops = _Ops()
