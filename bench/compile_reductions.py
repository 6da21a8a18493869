"""kiln.compile's fused row kernels (reductions with their prologue and
epilogue) at GPT-small shapes against kiln eager, torch eager and
torch.compile (issue 24):

    python bench/compile_reductions.py [--threads N[,N...]] [--repeat N] [--vocab-rows N] [--no-torch-compile]
                                       [--no-vocab] [--cases softmax,layer_norm,rms_norm] [--clock wall|cpu]

Cases: softmax, layer_norm and rms_norm over [8192, 768] and softmax over a vocabulary
row [rows, 50304], each forward and forward+backward (y.backward(g)), for
each thread count of --threads (default 1,2: one table per count, one run). Every
function is timed interleaved with the others of its case, the fastest of
`repeat` samples (the shared 2-core dev machine's load makes medians swing
by 2x), one run; `--clock cpu` times by this process's CPU time
(time.process_time: the steadier figure on a loaded machine, with 1 thread).
Columns are milliseconds, then each side's time over kiln eager's (below 1 is
faster than kiln eager).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kiln
import kiln.nn.functional as KF

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the kiln columns still run
    torch = None


def kiln_case(name, shape):
    n = shape[-1]
    w = kiln.ones(n).requires_grad_()
    b = kiln.zeros(n).requires_grad_()
    if name == "softmax":
        return lambda x: KF.softmax(x, -1)
    if name == "rms_norm":
        return lambda x: KF.rms_norm(x, (n,), w)
    return lambda x: KF.layer_norm(x, (n,), w, b)


def torch_case(name, shape):
    n = shape[-1]
    w = torch.ones(n, requires_grad=True)
    b = torch.zeros(n, requires_grad=True)
    if name == "softmax":
        return lambda x: TF.softmax(x, -1)
    if name == "rms_norm":
        return lambda x: TF.rms_norm(x, (n,), w)
    return lambda x: TF.layer_norm(x, (n,), w, b)


def sides(name, shape, backward, use_torch_compile):
    """{column: zero-argument function}, each side with its own inputs."""
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    grad = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    out = {}
    kx = kiln.from_numpy(data).requires_grad_(backward)
    kg = kiln.from_numpy(grad)
    keager = kiln_case(name, shape)
    kcompiled = kiln.compile(keager)

    def kiln_side(fn):
        if backward:
            return lambda: fn(kx).backward(kg)
        return lambda: fn(kx)

    out["kiln eager"] = kiln_side(keager)
    out["kiln compiled"] = kiln_side(kcompiled)
    if torch is not None:
        tx = torch.from_numpy(data).requires_grad_(backward)
        tg = torch.from_numpy(grad)
        teager = torch_case(name, shape)

        def torch_side(fn):
            if backward:
                return lambda: fn(tx).backward(tg)
            return lambda: fn(tx)

        out["torch eager"] = torch_side(teager)
        if use_torch_compile:
            out["torch.compile"] = torch_side(torch.compile(teager))
    return out


def time_case(fns, repeat, backward, clock=time.perf_counter):
    samples = {k: [] for k in fns}
    grad_mode = kiln.enable_grad if backward else kiln.no_grad
    torch_mode = (torch.enable_grad if backward else torch.no_grad) if torch is not None else None
    with grad_mode():
        ctx = torch_mode() if torch_mode else None
        if ctx:
            ctx.__enter__()
        try:
            for fn in fns.values():  # capture, compile, warm
                fn()
                fn()
            for _ in range(repeat):
                for k, fn in fns.items():
                    t0 = clock()
                    fn()
                    samples[k].append(clock() - t0)
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    return {k: min(s) for k, s in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--vocab-rows", type=int, default=512, help="rows of the [rows, 50304] softmax")
    parser.add_argument("--no-vocab", action="store_true", help="leave out the [rows, 50304] softmax")
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--cases", default="softmax,layer_norm,rms_norm", help="row cases over [8192, 768]")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    cases = [(name, (8192, 768)) for name in args.cases.split(",")]
    if not args.no_vocab:
        cases.append(("softmax", (args.vocab_rows, 50304)))
    columns = ["kiln eager", "kiln compiled", "torch eager", "torch.compile"]
    for threads in [int(t) for t in args.threads.split(",")]:
        kiln.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\nfloat32, {threads} threads, fastest of {args.repeat} ({args.clock} time); ms (time / kiln eager)")
        print("| case | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for name, shape in cases:
            for backward in (False, True):
                fns = sides(name, shape, backward, not args.no_torch_compile)
                t = time_case(fns, args.repeat, backward, clock)
                base = t["kiln eager"]
                cells = [f"{t[c] * 1e3:.2f} ({t[c] / base:.2f})" if c in t else "-" for c in columns]
                label = f"{name} {list(shape)} {'fwd+bwd' if backward else 'fwd'}"
                print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
