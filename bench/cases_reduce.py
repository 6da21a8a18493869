"""Reduction cases: sum, mean and amax on 1K, 1M and 16M float32 elements,
contiguous and transposed (2-D SIDE x SIDE views), full reductions and a dim
reduction (dim 1), on 1 and 2 threads. Each case sets both sides' thread
counts in make() and restores them in notes(); bytes_moved is the bytes read."""

from __future__ import annotations

from harness import Case

SIZES = {"1K": 1 << 10, "1M": 1 << 20, "16M": 1 << 24}
SIDE = {"1K": 32, "1M": 1 << 10, "16M": 1 << 12}
THREADS = (1, 2)


def _libs():
    import torch

    import kiln

    return kiln, torch


def _reduce_case(op: str, size: str, layout: str, dim, threads: int) -> Case:
    previous: list[tuple[int, int]] = []

    def make():
        kiln, torch = _libs()
        previous.append((kiln.get_num_threads(), torch.get_num_threads()))
        kiln.set_num_threads(threads)
        torch.set_num_threads(threads)
        n = SIDE[size]
        k, t = kiln.rand(n, n), torch.rand(n, n)
        if layout == "transposed":
            k, t = k.transpose(0, 1), t.transpose(0, 1)
        kfn, tfn = getattr(kiln, op), getattr(torch, op)
        if dim is None:
            return (lambda: kfn(k)), (lambda: tfn(t))
        return (lambda: kfn(k, dim)), (lambda: tfn(t, dim))

    def notes():
        kiln, torch = _libs()
        kt, tt = previous.pop()
        kiln.set_num_threads(kt)
        torch.set_num_threads(tt)
        return {"bytes_moved": 4 * SIZES[size], "threads": threads}

    where = "all" if dim is None else f"dim{dim}"
    return Case(f"{op} {where} {size} f32 {layout} {threads}T", make=make, notes=notes, group="reduce")


def cases() -> list[Case]:
    return [_reduce_case(op, size, layout, dim, threads)
            for op in ("sum", "mean", "amax") for size in SIZES for layout in ("contiguous", "transposed")
            for dim in (None, 1) for threads in THREADS]
