"""The GPT-style block's whole training step (kiln.bench._gpt_mini.gpt_block_class: LayerNorm, causal
self-attention, GELU MLP, residual adds; mse_loss, zero_grad, backward, AdamW step), kiln eager against
kiln compiled (backend "default": one graph holding forward, backward and the update), and optionally
torch eager / torch.compile (issue 24's target: compiled <= 0.85x kiln eager, faster than torch.compile):

    python bench/compile_gpt_block_step.py [--threads N] [--repeat N] [--calls N] [--torch] [--profile]

The sides are interleaved; each sample times ``--calls`` steps by wall clock and by this process's CPU
time (time.process_time: on a loaded machine the CPU time of a 1-thread run is the steadier figure);
medians of ``--repeat`` samples. Also printed: the compiled graph's fused-kernel count and ops left to
eager, and with ``--profile`` the compiled step's time per op/kernel from kiln.profiler.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def _block_step(lib, batch, tokens, channels, heads, compile_step=None):
    from kiln.bench._gpt_mini import gpt_block_class

    F = lib.nn.functional
    model = gpt_block_class(lib, channels, heads)()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((batch, tokens, channels)).astype(np.float32))
    target = lib.from_numpy(rng.standard_normal((batch, tokens, channels)).astype(np.float32))

    def step(x, target):
        loss = F.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = compile_step(step) if compile_step is not None else step
    return model, (lambda: run(x, target)), run


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--shape", default="8,64,128,4", help="batch,tokens,channels,heads")
    parser.add_argument("--torch", action="store_true", help="also torch eager and torch.compile")
    parser.add_argument("--profile", action="store_true", help="the compiled step's ops by kiln.profiler")
    args = parser.parse_args()
    b, t, c, h = (int(v) for v in args.shape.split(","))

    import kiln

    kiln.set_num_threads(args.threads)
    kiln.manual_seed(0)
    kmodel, k_eager, _ = _block_step(kiln, b, t, c, h)
    weights = {k: v.detach().numpy().copy() for k, v in kmodel.state_dict().items()}
    kcmodel, k_compiled, kc_fn = _block_step(kiln, b, t, c, h, lambda f: kiln.compile(f, backend="default"))
    kcmodel.load_state_dict({k: kiln.from_numpy(v.copy()) for k, v in weights.items()})
    sides = {"kiln eager": k_eager, "kiln compiled": k_compiled}
    if args.torch:
        import torch

        torch.set_num_threads(args.threads)
        tmodel, t_eager, _ = _block_step(torch, b, t, c, h)
        tmodel.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
        tcmodel, t_compiled, _ = _block_step(torch, b, t, c, h, torch.compile)
        tcmodel.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
        sides.update({"torch eager": t_eager, "torch.compile": t_compiled})

    for fn in sides.values():  # first calls: observe, capture + compile; then warm
        for _ in range(4):
            fn()
    from kiln.compiler._backends import compiled_graphs

    for g in compiled_graphs(kc_fn):
        print(f"compiled graph: {g.kernel_count} fused kernels; {len(g.eager_ops)} ops left to eager")
        counts: dict = {}
        for op in g.eager_ops:
            counts[op] = counts.get(op, 0) + 1
        print("  eager ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
        for i, ops in enumerate(g.kernel_ops):
            print(f"  kernel {i}: {' '.join(ops)}")
    print(f"breaks: {kc_fn.break_reasons}")

    wall = {k: [] for k in sides}
    cpu = {k: [] for k in sides}
    for _ in range(args.repeat):
        for k, fn in sides.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.calls):
                fn()
            cpu[k].append((time.process_time() - c0) / args.calls)
            wall[k].append((time.perf_counter() - w0) / args.calls)
    load = os.getloadavg()[0]
    print(f"\nGPT block step ({b}x{t}x{c}, {h} heads, AdamW), {args.threads} thread(s), median of "
          f"{args.repeat} x {args.calls} steps, load average {load:.1f}")
    print("| side | wall us / step | / kiln eager | CPU us / step | / kiln eager |")
    print("|---|---|---|---|---|")
    bw, bc = statistics.median(wall["kiln eager"]), statistics.median(cpu["kiln eager"])
    for k in sides:
        mw, mc = statistics.median(wall[k]), statistics.median(cpu[k])
        print(f"| {k} | {mw * 1e6:.0f} | {mw / bw:.2f} | {mc * 1e6:.0f} | {mc / bc:.2f} |")

    if args.profile:
        for name, fn in (("kiln eager", k_eager), ("kiln compiled", k_compiled)):
            with kiln.profiler.profile() as prof:
                for _ in range(20):
                    fn()
            print(f"\n{name}, 20 steps:")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
