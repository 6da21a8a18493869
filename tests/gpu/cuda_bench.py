"""The CUDA benchmarks of tests/gpu/run.sh (issue 25 item 6), one JSON object out.

Each benchmark runs alone under try/except, so one missing kernel records its error and the
rest still run. Times come from CUDA events on the current stream (median of the timed calls
after warm-up); torch runs the same workload on the same GPU when it is installed there with
CUDA. Figures:
  copy_bandwidth        device-to-device copy, GB/s (read + write), the reference for the rest;
  alloc_from_cache      an allocation served by the caching allocator, µs per kiln.empty + free
                        (host time, the Python op call included);
  pointwise             an add and a 4-op chain eager (and kiln.compile'd when that runs on CUDA),
                        effective GB/s (the chain's one read and one write) as a fraction of the copy;
  softmax, layer_norm   rows x cols float32, GB/s and fraction of the copy bandwidth;
  matmul                TFLOP/s of kiln.mm against cuBLAS called directly (kiln._C._cublas_gemm_direct)
                        and torch.mm, float32 / float16 / bfloat16;
  training              MLP and GPT-block training steps (forward, cross-entropy, backward, AdamW), ms per
                        step: kiln eager, kiln with the model kiln.compile'd, torch eager.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback

import kiln

F = kiln.nn.functional


def _torch():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except Exception:  # torch missing or without CUDA on the GPU machine
        return None


def timed_ms(fn, lib=kiln, warmup=3, iters=15) -> float:
    """Median milliseconds per call of fn on lib's current CUDA stream."""
    for _ in range(warmup):
        fn()
    lib.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def bench_copy(quick: bool) -> dict:
    n = (1 << 24) if quick else (1 << 26)
    x = kiln.ones(n, device="cuda")
    y = kiln.empty(n, device="cuda")
    ms = timed_ms(lambda: y.copy_(x))
    return {"elements": n, "ms": ms, "GBps": gbps(2 * 4 * n, ms)}


def bench_alloc() -> dict:
    kiln.empty(1024, device="cuda")  # the block is cached from here on
    kiln.cuda.synchronize()
    count = 20000
    start = time.perf_counter()
    for _ in range(count):
        kiln.empty(1024, device="cuda")
    us = (time.perf_counter() - start) / count * 1e6
    return {"us_per_alloc_free": us, "calls": count, "note": "host time of kiln.empty + free, Python call included"}


def cheap_chain(x):
    return ((x * 1.5 + 0.5).relu() * x).sigmoid()


def bench_pointwise(copy_gbps: float, quick: bool) -> dict:
    n = (1 << 24) if quick else (1 << 26)
    a, b = kiln.rand(n, device="cuda"), kiln.rand(n, device="cuda")
    out = {"elements": n}
    ms = timed_ms(lambda: a + b)
    out["add"] = {"ms": ms, "GBps": gbps(3 * 4 * n, ms), "fraction_of_copy": gbps(3 * 4 * n, ms) / copy_gbps}
    ms = timed_ms(lambda: cheap_chain(a))
    out["chain_eager"] = {"ms": ms, "fraction_of_copy": gbps(2 * 4 * n, ms) / copy_gbps}
    try:
        compiled = kiln.compile(cheap_chain)
        got = compiled(a)
        err = (got - cheap_chain(a)).abs().max().item()
        ms = timed_ms(lambda: compiled(a))
        out["chain_compiled"] = {"ms": ms, "fraction_of_copy": gbps(2 * 4 * n, ms) / copy_gbps, "max_error": err}
    except Exception as e:  # kiln.compile on CUDA is issue 25 item 4
        out["chain_compiled"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    torch = _torch()
    if torch is not None:
        ta = torch.rand(n, device="cuda")
        ms = timed_ms(lambda: cheap_chain(ta), torch)
        out["chain_torch_eager"] = {"ms": ms, "fraction_of_copy": gbps(2 * 4 * n, ms) / copy_gbps}
    return out


def _rows_bench(name, make_kiln, make_torch, nbytes, copy_gbps) -> dict:
    out = {}
    ms = timed_ms(make_kiln())
    out["kiln"] = {"ms": ms, "GBps": gbps(nbytes, ms), "fraction_of_copy": gbps(nbytes, ms) / copy_gbps}
    torch = _torch()
    if torch is not None:
        ms = timed_ms(make_torch(torch), torch)
        out["torch"] = {"ms": ms, "GBps": gbps(nbytes, ms), "fraction_of_copy": gbps(nbytes, ms) / copy_gbps}
    return out


def bench_softmax(copy_gbps: float, quick: bool) -> dict:
    rows, cols = (4096 if quick else 16384), 1024
    x = kiln.randn(rows, cols, device="cuda")

    def make_torch(torch):
        t = torch.randn(rows, cols, device="cuda")
        return lambda: torch.softmax(t, -1)
    out = _rows_bench("softmax", lambda: (lambda: kiln.softmax(x, -1)), make_torch, 2 * 4 * rows * cols, copy_gbps)
    out["shape"] = [rows, cols]
    return out


def bench_layer_norm(copy_gbps: float, quick: bool) -> dict:
    rows, cols = (4096 if quick else 16384), 1024
    x = kiln.randn(rows, cols, device="cuda")
    w, b = kiln.randn(cols, device="cuda"), kiln.randn(cols, device="cuda")

    def make_torch(torch):
        t = torch.randn(rows, cols, device="cuda")
        tw, tb = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        return lambda: torch.nn.functional.layer_norm(t, (cols,), tw, tb)
    out = _rows_bench("layer_norm", lambda: (lambda: F.layer_norm(x, [cols], w, b)), make_torch,
                      2 * 4 * rows * cols, copy_gbps)
    out["shape"] = [rows, cols]
    return out


def bench_matmul(quick: bool) -> dict:
    n = 2048 if quick else 4096
    flop = 2 * n ** 3
    out = {"n": n}
    torch = _torch()
    for name in ("float32", "float16", "bfloat16"):
        dtype = getattr(kiln, name)
        a, b = kiln.randn(n, n, device="cuda").to(dtype), kiln.randn(n, n, device="cuda").to(dtype)
        c = kiln.empty(n, n, dtype=dtype, device="cuda")
        row = {"kiln_TFLOPs": flop / (timed_ms(lambda: kiln.mm(a, b)) * 1e-3) / 1e12}
        row["cublas_direct_TFLOPs"] = flop / (timed_ms(lambda: kiln._C._cublas_gemm_direct(c, a, b)) * 1e-3) / 1e12
        row["kiln_vs_cublas"] = row["kiln_TFLOPs"] / row["cublas_direct_TFLOPs"]
        if torch is not None:
            ta = torch.randn(n, n, device="cuda").to(getattr(torch, name))
            tb = torch.randn(n, n, device="cuda").to(getattr(torch, name))
            row["torch_TFLOPs"] = flop / (timed_ms(lambda: torch.mm(ta, tb), torch) * 1e-3) / 1e12
        out[name] = row
    return out


def _mlp(lib, width):
    nn = lib.nn
    return nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width), nn.LayerNorm(width),
                         nn.Linear(width, 10))


def _block(lib, C, H):
    nn, Fl = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))
            self.head = nn.Linear(C, 64)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            causal = lib.ones(T, T, device=x.device).tril() == 0
            att = Fl.softmax(att.masked_fill(causal, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            x = x + self.mlp(self.ln_2(x))
            return self.head(x)
    return Block()


def _train_step_ms(lib, model, x, y, compiled: bool = False) -> float:
    model = model.to("cuda")
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    Fl = lib.nn.functional
    forward = lib.compile(model) if compiled else model

    def step():
        opt.zero_grad()
        logits = forward(x)
        loss = Fl.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
    return timed_ms(step, lib, warmup=2, iters=10)


def _compiled_or_error(run):
    """The compiled step's time, or its error (kiln.compile on CUDA is issue 25 item 4)."""
    try:
        return run()
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:300]}"


def bench_training(quick: bool) -> dict:
    out = {}
    torch = _torch()
    width, batch = (256, 64) if quick else (1024, 256)
    for lib in [kiln] + ([torch] if torch is not None else []):
        name = lib.__name__
        lib.manual_seed(0)
        x = lib.randn(batch, width, device="cuda")
        y = (lib.rand(batch, device="cuda") * 10).long()
        row = out.setdefault("mlp_step", {"width": width, "batch": batch})
        row[f"{name}_ms"] = _train_step_ms(lib, _mlp(lib, width), x, y)
        if lib is kiln:
            row["kiln_compiled_ms"] = _compiled_or_error(lambda: _train_step_ms(lib, _mlp(lib, width), x, y, True))
    C, H, T, B = (128, 4, 64, 4) if quick else (512, 8, 256, 16)
    for lib in [kiln] + ([torch] if torch is not None else []):
        name = lib.__name__
        lib.manual_seed(0)
        x = lib.randn(B, T, C, device="cuda")
        y = (lib.rand(B, T, device="cuda") * 64).long()
        row = out.setdefault("gpt_block_step", {"C": C, "H": H, "T": T, "B": B})
        row[f"{name}_ms"] = _train_step_ms(lib, _block(lib, C, H), x, y)
        if lib is kiln:
            row["kiln_compiled_ms"] = _compiled_or_error(lambda: _train_step_ms(lib, _block(lib, C, H), x, y, True))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where the JSON goes")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = parser.parse_args(argv)
    results: dict = {"cuda_available": kiln.cuda.is_available()}
    if not kiln.cuda.is_available():
        results["error"] = "no GPU: " + kiln._C._cuda_unavailable_reason()
        json.dump(results, open(args.out, "w"), indent=2)
        print(json.dumps(results))
        return 0
    results["device"] = kiln.cuda.get_device_name(0)
    torch = _torch()
    results["torch"] = torch.__version__ if torch is not None else None
    copy = {}

    def run(name, fn):
        begin = time.perf_counter()
        try:
            results[name] = fn()
        except Exception as e:  # recorded, the other benchmarks still run
            results[name] = {"error": f"{type(e).__name__}: {str(e)[:500]}",
                             "where": traceback.format_exc().splitlines()[-3:]}
        results[name] = dict(results[name], seconds=round(time.perf_counter() - begin, 2))
        print(name, json.dumps(results[name]), flush=True)

    run("copy_bandwidth", lambda: copy.update(bench_copy(args.quick)) or dict(copy))
    copy_gbps = copy.get("GBps", float("nan"))
    run("alloc_from_cache", bench_alloc)
    run("pointwise", lambda: bench_pointwise(copy_gbps, args.quick))
    run("softmax", lambda: bench_softmax(copy_gbps, args.quick))
    run("layer_norm", lambda: bench_layer_norm(copy_gbps, args.quick))
    run("matmul", lambda: bench_matmul(args.quick))
    run("training", lambda: bench_training(args.quick))
    json.dump(results, open(args.out, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
