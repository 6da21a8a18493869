"""Dispatch overhead from Python: a 1-element add, where the kernel is nothing
and the cost is argument parsing, dispatch, allocation and the result object.

Issue target: kiln's per-op time from Python at most 0.5x PyTorch's.
"""

from __future__ import annotations

import types

from harness import Case


def _setup() -> types.SimpleNamespace:
    import torch

    import kiln

    ns = types.SimpleNamespace(kiln=kiln, torch=torch)
    ns.kx, ns.ky = kiln.ones(1), kiln.ones(1)
    ns.tx, ns.ty = torch.ones(1), torch.ones(1)
    return ns


def cases() -> list[Case]:
    return [
        Case("add(x, y) 1 element", lambda s: s.kiln.add(s.kx, s.ky), lambda s: s.torch.add(s.tx, s.ty),
             setup=_setup, group="dispatch"),
        Case("x.add(y) 1 element", lambda s: s.kx.add(s.ky), lambda s: s.tx.add(s.ty), setup=_setup, group="dispatch"),
        Case("add(x, y, alpha=2) 1 element", lambda s: s.kiln.add(s.kx, s.ky, alpha=2),
             lambda s: s.torch.add(s.tx, s.ty, alpha=2), setup=_setup, group="dispatch"),
        Case("add(x, 1.5) 1 element", lambda s: s.kiln.add(s.kx, 1.5), lambda s: s.torch.add(s.tx, 1.5),
             setup=_setup, group="dispatch"),
        Case("ops.kiln.add boxed vs torch.ops.aten.add", lambda s: s.kiln.ops.kiln.add(s.kx, s.ky),
             lambda s: s.torch.ops.aten.add(s.tx, s.ty), setup=_setup, group="dispatch"),
    ]
