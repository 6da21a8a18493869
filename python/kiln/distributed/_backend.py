"""kiln.distributed's backends and reduction ops: Backend (the names torch
accepts), ReduceOp, and the errors for backends kiln does not have."""

from __future__ import annotations

from kiln._C import _distributed
from kiln.distributed._nccl import nccl_missing, nccl_version

__all__ = ["Backend", "ReduceOp", "check_backend", "is_available", "is_gloo_available", "is_mpi_available",
           "is_nccl_available", "is_ucc_available", "is_xccl_available", "is_backend_available"]

ReduceOp = _distributed.ReduceOp
# torch's spelling for the ops Gloo cannot run (BAND, BOR, BXOR, PREMUL_SUM) are absent: using one is an
# AttributeError naming it, as for any missing member.


class Backend(str):
    """torch.distributed.Backend: a backend name, lower-cased (``Backend("GLOO") == "gloo"``)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    default_device_backend_map = {"cpu": GLOO}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)


def is_available() -> bool:
    """Whether kiln.distributed can be used: always (Gloo is part of every kiln build)."""
    return True


def is_gloo_available() -> bool:
    return True


def is_nccl_available() -> bool:
    """Whether NCCL (libnccl.so.2) loads: it is dlopen'ed at first use, never linked (DESIGN.md,
    decision 14). False, never an error, where it is not installed."""
    return nccl_missing() is None


def is_mpi_available() -> bool:
    return False


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    name = str(Backend(backend))
    return name == Backend.GLOO or (name == Backend.NCCL and is_nccl_available())


_UNAVAILABLE = {
    Backend.MPI: "Distributed package doesn't have MPI built in. kiln's CPU backend is Gloo: use backend='gloo'",
    Backend.UCC: "Distributed package doesn't have UCC built in. kiln's CPU backend is Gloo: use backend='gloo'",
    Backend.XCCL: "Distributed package doesn't have XCCL built in. kiln's CPU backend is Gloo: use backend='gloo'",
}


def check_backend(backend) -> str:
    """The backend name init_process_group runs on ("gloo"); raises for one kiln does not have.

    torch's device-mapped spellings are accepted when their CPU backend is Gloo ("cpu:gloo,cuda:nccl")."""
    if backend is None:
        return Backend.GLOO
    text = str(backend).lower()
    if ":" in text:
        pairs = dict(part.split(":", 1) for part in text.split(",") if ":" in part)
        if "cpu" not in pairs:
            raise RuntimeError(f"backend '{backend}' names no CPU backend; kiln runs collectives on the CPU with Gloo")
        text = pairs["cpu"]
    name = Backend(text)
    if name == Backend.GLOO:
        return Backend.GLOO
    if name == Backend.NCCL:
        _check_nccl()
        return Backend.NCCL
    if name in _UNAVAILABLE:
        raise RuntimeError(_UNAVAILABLE[name])
    raise ValueError(f"Invalid backend: '{backend}' (kiln.distributed supports 'gloo' and 'nccl')")


def _check_nccl() -> None:
    """Raises torch's RuntimeError naming what the NCCL backend lacks: the library or a GPU."""
    missing = nccl_missing()
    if missing is not None:
        raise RuntimeError(f"Distributed package doesn't have NCCL built in: kiln loads NCCL with dlopen at "
                           f"first use, and it is not installed here. {missing}\nUse backend='gloo' for CPU "
                           f"tensors.")
    from kiln import cuda
    if cuda.device_count() == 0:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! (NCCL "
                           f"{'.'.join(map(str, nccl_version()))} loaded, but kiln sees no CUDA device; use "
                           "backend='gloo' for CPU tensors)")
