"""Dispatch overhead from Python: a 1-element add, where the kernel is nothing
and the cost is argument parsing, dispatch, allocation and the result object.

Issue target: kiln's per-op time from Python at most 0.5x PyTorch's. The cases
use argument-free closures (Case.make) so the timing loop adds the same few
tens of nanoseconds to both sides and nothing else.
"""

from __future__ import annotations

from harness import Case


def _libs():
    import torch

    import kiln

    return kiln, torch


def _add():
    kiln, torch = _libs()
    kx, ky, tx, ty = kiln.ones(1), kiln.ones(1), torch.ones(1), torch.ones(1)
    kadd, tadd = kiln.add, torch.add
    return (lambda: kadd(kx, ky)), (lambda: tadd(tx, ty))


def _method_add():
    kiln, torch = _libs()
    kx, ky, tx, ty = kiln.ones(1), kiln.ones(1), torch.ones(1), torch.ones(1)
    return (lambda: kx.add(ky)), (lambda: tx.add(ty))


def _add_alpha():
    kiln, torch = _libs()
    kx, ky, tx, ty = kiln.ones(1), kiln.ones(1), torch.ones(1), torch.ones(1)
    kadd, tadd = kiln.add, torch.add
    return (lambda: kadd(kx, ky, alpha=2)), (lambda: tadd(tx, ty, alpha=2))


def _add_scalar():
    kiln, torch = _libs()
    kx, tx = kiln.ones(1), torch.ones(1)
    kadd, tadd = kiln.add, torch.add
    return (lambda: kadd(kx, 1.5)), (lambda: tadd(tx, 1.5))


def _boxed():
    kiln, torch = _libs()
    kx, ky, tx, ty = kiln.ones(1), kiln.ones(1), torch.ones(1), torch.ones(1)
    kop, top = kiln.ops.kiln.add, torch.ops.aten.add
    return (lambda: kop(kx, ky)), (lambda: top(tx, ty))


def cases() -> list[Case]:
    return [
        Case("add(x, y) 1 element", make=_add, group="dispatch"),
        Case("x.add(y) 1 element", make=_method_add, group="dispatch"),
        Case("add(x, y, alpha=2) 1 element", make=_add_alpha, group="dispatch"),
        Case("add(x, 1.5) 1 element", make=_add_scalar, group="dispatch"),
        Case("ops.kiln.add boxed vs torch.ops.aten.add", make=_boxed, group="dispatch"),
    ]
