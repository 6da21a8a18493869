"""Shape-op cases: the copying ops (contiguous of a transpose, clone, cat,
stack, repeat, flip, roll, tril) on large float32 inputs, and the per-call cost
of the view ops on a small one.

kiln is imported inside each case's setup, never at module import.
"""

from __future__ import annotations

import types

from harness import Case

BIG = 4096  # contiguous() of a transposed BIG x BIG float32 (64 MiB)
ROWS, COLS = 2048, 2048  # 16 MiB operands for the other copies
SMALL = (4, 8, 16)  # view ops: the per-call overhead dominates


def _inputs(**make):
    """A setup importing both libraries and building each input on both sides:
    ``name=lambda lib: ...`` becomes ``libs.kiln_<name>`` and ``libs.torch_<name>``."""

    def setup() -> types.SimpleNamespace:
        import torch

        import kiln

        libs = types.SimpleNamespace(kiln=kiln, torch=torch)
        for name, fn in make.items():
            setattr(libs, f"kiln_{name}", fn(kiln))
            setattr(libs, f"torch_{name}", fn(torch))
        return libs

    return setup


def _case(name: str, group: str, fn, **inputs) -> Case:
    """``fn(lib, *inputs)`` on both sides, the inputs built once in setup."""
    names = list(inputs)
    return Case(
        name,
        lambda libs: fn(libs.kiln, *(getattr(libs, f"kiln_{n}") for n in names)),
        lambda libs: fn(libs.torch, *(getattr(libs, f"torch_{n}") for n in names)),
        setup=_inputs(**inputs),
        group=group,
    )


def _matrix(rows: int, cols: int):
    return lambda lib: lib.ones(rows, cols, dtype=lib.float32)


def _copy_cases() -> list[Case]:
    square = _matrix(ROWS, COLS)
    return [
        _case(f"contiguous() of transposed {BIG}x{BIG} f32", "shape-copy", lambda lib, x: x.contiguous(),
              x=lambda lib: lib.ones(BIG, BIG, dtype=lib.float32).t()),
        _case(f"clone {ROWS}x{COLS} f32", "shape-copy", lambda lib, x: x.clone(), x=square),
        _case(f"cat dim 0 of 2x {ROWS}x{COLS} f32", "shape-copy", lambda lib, a, b: lib.cat([a, b]), a=square,
              b=square),
        _case(f"cat dim 1 of 2x {ROWS}x{COLS} f32", "shape-copy", lambda lib, a, b: lib.cat([a, b], 1), a=square,
              b=square),
        _case(f"cat dim 1 of 64x {ROWS}x32 f32", "shape-copy", lambda lib, xs: lib.cat(xs, 1),
              xs=lambda lib: [lib.ones(ROWS, 32, dtype=lib.float32) for _ in range(64)]),
        _case(f"stack dim 0 of 2x {ROWS}x{COLS} f32", "shape-copy", lambda lib, a, b: lib.stack([a, b]), a=square,
              b=square),
        _case(f"repeat(2, 2) of {ROWS // 2}x{COLS // 2} f32", "shape-copy", lambda lib, x: x.repeat(2, 2),
              x=_matrix(ROWS // 2, COLS // 2)),
        _case(f"repeat(1, 8) of {ROWS * 8}x4 f32", "shape-copy", lambda lib, x: x.repeat(1, 8),
              x=_matrix(ROWS * 8, 4)),
        _case(f"repeat_interleave(2, dim=0) {ROWS}x{COLS // 2} f32", "shape-copy",
              lambda lib, x: x.repeat_interleave(2, dim=0), x=_matrix(ROWS, COLS // 2)),
        _case(f"flip(-1) {ROWS}x{COLS} f32", "shape-copy", lambda lib, x: x.flip(-1), x=square),
        _case(f"flip(0) {ROWS}x{COLS} f32", "shape-copy", lambda lib, x: x.flip(0), x=square),
        _case(f"roll(3, 1) {ROWS}x{COLS} f32", "shape-copy", lambda lib, x: x.roll(3, 1), x=square),
        _case(f"tril {ROWS}x{COLS} f32", "shape-copy", lambda lib, x: x.tril(), x=square),
    ]


def _view_cases() -> list[Case]:
    small = lambda lib: lib.ones(*SMALL, dtype=lib.float32)  # noqa: E731
    return [
        _case("view(-1) small", "shape-view", lambda lib, x: x.view(-1), x=small),
        _case("reshape(32, 16) small", "shape-view", lambda lib, x: x.reshape(32, 16), x=small),
        _case("permute(2, 0, 1) small", "shape-view", lambda lib, x: x.permute(2, 0, 1), x=small),
        _case("transpose(0, 1) small", "shape-view", lambda lib, x: x.transpose(0, 1), x=small),
        _case("unsqueeze(0) small", "shape-view", lambda lib, x: x.unsqueeze(0), x=small),
        _case("expand(3, 4, 8, 16) small", "shape-view", lambda lib, x: x.expand(3, 4, 8, 16), x=small),
        _case("split(4, -1) small", "shape-view", lambda lib, x: x.split(4, -1), x=small),
        _case("flatten(1) small", "shape-view", lambda lib, x: x.flatten(1), x=small),
    ]


def cases() -> list[Case]:
    """Every shape case."""
    return _copy_cases() + _view_cases()
