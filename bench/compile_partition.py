"""What a compiled model saves between its forward and its backward (issue 23 item 4:
the min-cut partitioner, capture/SavePlan.h), and what that costs in step time:

    python bench/compile_partition.py [--steps N] [--repeat N]
    python bench/compile_partition.py --against /work/main/.venv/bin/python [--rounds N]

Three models, each compiled with kiln.compile(model) (default backend) and trained
eagerly around it (loss, zero_grad, backward, optimizer step):
- the seed MLP (784-128-10, batch 64, Adam, cross_entropy);
- one GPT-style block (8 x 64 tokens x 128 channels, 4 heads, AdamW, mse_loss);
- a pointwise chain after a linear layer (256 x 512: sigmoid, products, tanh, exp).

Printed per model: the saved values a step holds from its forward to its backward
(count and bytes, measured on the tensors the compiled node keeps: each tensor's own
bytes, and the distinct storages they hold, views of one storage counted once), the fused
kernels of the forward and backward graphs, and the step's CPU time
(time.process_time, one thread: the machine is shared), median of --repeat samples
of --steps steps. With --against PYTHON the same measurement runs alternately
under this tree's interpreter and PYTHON's (another build's venv: its own kiln),
--rounds times each, so "before" and "after" see the same load; medians over rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np


def _seed_mlp(kiln):
    from cases_training import seed_mlp_step
    model, _, x, y = seed_mlp_step(kiln)
    return model, kiln.optim.Adam(model.parameters(), lr=1e-3), x, y, kiln.nn.functional.cross_entropy


def _gpt_block(kiln):
    from kiln.bench._gpt_mini import gpt_block_class
    model = gpt_block_class(kiln, 128, 4)()
    rng = np.random.default_rng(0)
    x = kiln.from_numpy(rng.standard_normal((8, 64, 128)).astype(np.float32))
    target = kiln.from_numpy(rng.standard_normal((8, 64, 128)).astype(np.float32))
    return model, kiln.optim.AdamW(model.parameters(), lr=3e-4), x, target, kiln.nn.functional.mse_loss


def _pointwise_chain(kiln):
    nn = kiln.nn

    class Chain(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(512, 512)

        def forward(self, x):
            h = self.lin(x)
            s = h.sigmoid()
            u = (s * h).tanh()
            return u * s + (h * 0.5).exp() * u

    kiln.manual_seed(0)
    model = Chain()
    rng = np.random.default_rng(0)
    x = kiln.from_numpy(rng.standard_normal((256, 512)).astype(np.float32))
    target = kiln.from_numpy(rng.standard_normal((256, 512)).astype(np.float32))
    return model, kiln.optim.SGD(model.parameters(), lr=1e-3), x, target, kiln.nn.functional.mse_loss


CASES = {"seed MLP": _seed_mlp, "GPT block": _gpt_block, "pointwise chain": _pointwise_chain}


def _storage_bytes(tensors) -> int:
    """The bytes of the distinct storages `tensors` hold (views of one storage count once): per storage
    base (data_ptr less the offset), the furthest byte any of its tensors reaches."""
    ends: dict = {}
    for t in tensors:
        size = t.element_size()
        base = t.data_ptr() - t.storage_offset() * size
        reach = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) if t.numel() else 0
        ends[base] = max(ends.get(base, 0), (t.storage_offset() + reach) * size)
    return sum(ends.values())


def measure(steps: int, repeat: int) -> dict:
    """{case: {saved, saved_bytes, forward_kernels, backward_kernels, step_ms}} under this interpreter's kiln."""
    import kiln
    from kiln.compiler import _joint

    kiln.set_num_threads(1)
    held = []
    attach = _joint.JointProgram._attach

    def counting_attach(self, forward_values, saved, inputs, results):
        held.append((len(saved), sum(t.numel() * t.element_size() for t in saved), _storage_bytes(saved)))
        return attach(self, forward_values, saved, inputs, results)

    _joint.JointProgram._attach = counting_attach
    figures = {}
    for name, build in CASES.items():
        model, opt, x, target, loss_fn = build(kiln)
        compiled = kiln.compile(model)

        def step():
            loss = loss_fn(compiled(x), target)
            opt.zero_grad()
            loss.backward()
            opt.step()

        for _ in range(3):  # capture + compile, then replays
            step()
        held.clear()
        step()
        saved, saved_bytes, storage_bytes = held[-1]
        entry = next(e for e in compiled._compiled_call.cache.values() if hasattr(e, "program"))
        graphs = [entry.program.forward.compiled, entry.program.backward.compiled]
        samples = []
        for _ in range(repeat):
            t0 = time.process_time()
            for _ in range(steps):
                step()
            samples.append((time.process_time() - t0) / steps * 1e3)
        figures[name] = {"saved": saved, "saved_bytes": saved_bytes, "storage_bytes": storage_bytes,
                         "forward_kernels": graphs[0].kernel_count if graphs[0] else None,
                         "backward_kernels": graphs[1].kernel_count if graphs[1] else None,
                         "step_ms": statistics.median(samples)}
    return figures


def _row(name: str, f: dict) -> str:
    return (f"{name:22s} saved {f['saved']:3d} values {f['saved_bytes'] / 1024:7.1f} KiB (storage "
            f"{f['storage_bytes'] / 1024:7.1f} KiB)   kernels fwd "
            f"{f['forward_kernels']} bwd {f['backward_kernels']}   step {f['step_ms']:7.2f} ms CPU")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", help="another interpreter (a venv of another kiln build) to compare with")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.steps, args.repeat)))
        return 0
    if not args.against:
        for name, f in measure(args.steps, args.repeat).items():
            print(_row(name, f))
        return 0
    sides = {"before": args.against, "after": sys.executable}
    runs = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, python in sides.items():
            out = subprocess.run([python, __file__, "--json", "--steps", str(args.steps), "--repeat",
                                  str(args.repeat)], check=True, capture_output=True, text=True).stdout
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
    for name in CASES:
        for side in sides:
            first = dict(runs[side][0][name])
            first["step_ms"] = statistics.median(r[name]["step_ms"] for r in runs[side])
            print(_row(f"{name} {side}", first))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
