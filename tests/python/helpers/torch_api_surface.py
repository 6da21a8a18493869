"""Compares kiln's public names and signatures with torch's, mechanically
(dir/__all__ and inspect.signature on both), for test_torch_api_surface.py."""

from __future__ import annotations

import importlib
import inspect
import types

# torch's modules a training script touches, each against kiln's module of the same path.
MODULES = ["torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.optim",
           "torch.optim.lr_scheduler", "torch.utils.data", "torch.cuda", "torch.amp", "torch.autograd",
           "torch.utils.checkpoint", "torch.random", "torch.linalg", "torch.fft", "torch.special", "torch.backends",
           "torch.accelerator", "torch.multiprocessing", "torch.serialization"]


def _kiln_path(torch_path: str) -> str:
    return "kiln" + torch_path[len("torch"):]


def public_names(module) -> list[str]:
    """A module's public names: its __all__, or the names it defines (not submodules, not imports from elsewhere)."""
    if hasattr(module, "__all__"):
        return sorted(set(module.__all__))
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name, None)
        if isinstance(value, types.ModuleType):
            continue
        owner = getattr(value, "__module__", None)
        if owner is None or owner.startswith("torch"):
            names.append(name)
    return sorted(names)


def missing_names(torch_path: str) -> list[str]:
    """torch's public names in the module that kiln's module lacks."""
    torch_module = importlib.import_module(torch_path)
    kiln_module = importlib.import_module(_kiln_path(torch_path))
    return [name for name in public_names(torch_module) if not hasattr(kiln_module, name)]


def _parameters(fn) -> list[str] | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p.name for p in signature.parameters.values() if p.name != "self"]


# The constructors whose arguments training scripts spell out: every nn Module, optimizer and scheduler,
# and the data loading classes.
def _constructors() -> list[tuple[str, str]]:
    import torch

    pairs = []
    for path in ("torch.nn", "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data"):
        module = importlib.import_module(path)
        for name in public_names(module):
            value = getattr(module, name, None)
            if isinstance(value, type) and (issubclass(value, torch.nn.Module) or path != "torch.nn"):
                pairs.append((path, name))
    return pairs


def signature_gaps() -> dict[str, list[str]]:
    """For each constructor both have, torch's parameter names kiln's constructor lacks (by name)."""
    gaps = {}
    for path, name in _constructors():
        kiln_module = importlib.import_module(_kiln_path(path))
        if not hasattr(kiln_module, name):
            continue
        torch_params = _parameters(getattr(importlib.import_module(path), name).__init__)
        kiln_params = _parameters(getattr(kiln_module, name).__init__)
        if torch_params is None or kiln_params is None:
            continue
        if "kwargs" in kiln_params:
            continue
        lacking = [p for p in torch_params if p not in kiln_params and p not in ("args", "kwargs")]
        if lacking:
            gaps[f"{path}.{name}"] = lacking
    return gaps
