"""The seed MLP's whole training step (784-128-10, batch 64: forward, cross_entropy,
zero_grad, backward, Adam step) four ways, side by side in one run (issue 23 item 5,
issue 24's target: whole step compiled <= 0.8x kiln eager):

    python bench/compile_training_step.py [--threads N] [--repeat N] [--calls N]

- kiln eager;
- kiln compiled: the whole step under kiln.compile (default backend), one graph
  holding forward, backward and the Adam update;
- torch eager;
- torch.compile of the whole step (its graph breaks wherever dynamo breaks;
  torch compiles its optimizer step separately).

All four start from the same weights. Each sample times ``--calls`` steps; the
sides are interleaved, median of ``--repeat`` samples. Also printed: the kiln
compiled step's first calls (the eager observing call, then capture + compile)
and its graph's size, fused-kernel count and ops left to eager.
"""

from __future__ import annotations

import argparse
import statistics
import time

from cases_training import seed_mlp_step


def _mlp_step(lib, compile_step=None):
    model, step, x, y = seed_mlp_step(lib)
    run = compile_step(step) if compile_step is not None else step
    return model, (lambda: run(x, y)), run


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    import torch

    import kiln

    kiln.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tmodel, t_eager, _ = _mlp_step(torch)
    weights = {k: v.detach().numpy().copy() for k, v in tmodel.state_dict().items()}
    tcmodel, t_compiled, _ = _mlp_step(torch, torch.compile)
    tcmodel.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    kmodel, k_eager, _ = _mlp_step(kiln)
    kmodel.load_state_dict({k: kiln.from_numpy(v.copy()) for k, v in weights.items()})
    kcmodel, k_compiled, kc_fn = _mlp_step(kiln, lambda f: kiln.compile(f, backend="default"))
    kcmodel.load_state_dict({k: kiln.from_numpy(v.copy()) for k, v in weights.items()})

    firsts = []
    for _ in range(3):
        t0 = time.perf_counter()
        k_compiled()
        firsts.append(time.perf_counter() - t0)
    print("kiln compiled step, first three calls (eager observing call; capture + compile; replay): "
          + ", ".join(f"{f * 1e3:.1f} ms" for f in firsts))
    entries = [e for e in kc_fn.cache.values() if hasattr(e, "program")]
    if entries:
        inner = entries[0].program.inner
        compiled = inner.compiled
        print(f"graph: {entries[0].num_ops} ops; impure: {inner.impure_reason}; fused kernels: "
              f"{compiled.kernel_count if compiled else None}; ops left to eager: "
              f"{len(compiled.eager_ops) if compiled else None}; copy-backs stored in place by a kernel: "
              f"{compiled.outputs_written_into_inputs if compiled else None} of {len(inner.copy_back)}")
    print(f"breaks: {kc_fn.break_reasons}")
    t0 = time.perf_counter()
    t_compiled()
    print(f"torch.compile first call: {(time.perf_counter() - t0) * 1e3:.0f} ms")

    sides = {"kiln eager": k_eager, "kiln compiled (whole step, default)": k_compiled,
             "torch eager": t_eager, "torch.compile (whole step)": t_compiled}
    for fn in sides.values():  # warm
        for _ in range(3):
            fn()
    samples = {k: [] for k in sides}
    for _ in range(args.repeat):
        for k, fn in sides.items():
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            samples[k].append((time.perf_counter() - t0) / args.calls)
    base = statistics.median(samples["kiln eager"])
    print(f"\nseed MLP training step (784-128-10, batch 64, Adam), {args.threads} thread(s), "
          f"median of {args.repeat} x {args.calls} steps")
    print("| side | us / step | / kiln eager |")
    print("|---|---|---|")
    for k, s in samples.items():
        m = statistics.median(s)
        print(f"| {k} | {m * 1e6:.0f} | {m / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
