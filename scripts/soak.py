"""Soak run: trains a small GPT-style model (causal attention, weight tying, AdamW) eagerly
and through kiln.compile for a while, sampling the CPU caching allocator's statistics and
the process's resident set size after every step, and fails if anything grows once warmed
up.

    .venv/bin/python scripts/soak.py [--seconds S] [--mode eager|compiled|both] [--warmup N]

What "no growth" means, per mode, after --warmup steps (the caches fill, the compiled
graphs are captured):
- allocated bytes and live allocations at the end of a step are exactly those at the end
  of the first measured step (a step holds nothing over but parameters and optimizer
  state, which exist from the warm-up on);
- reserved bytes (segments held from the OS) never exceed the warm-up's peak;
- the RSS rises by at most --rss-slack-mib (default 16) over the run: Python's own
  heaps and glibc's arenas move a little, a leak of a tensor per step does not stay
  under it for long.
Exit status 1 and a table of the samples that grew. tests/python/models/test_soak.py runs
a few seconds of it; KILN_LONG_TESTS=1 there, or this script with --seconds 600, the long run.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

import kiln

VOCAB, BLOCK, EMBED, HEADS, LAYERS, BATCH = 64, 16, 32, 4, 2, 4
PAGE = os.sysconf("SC_PAGE_SIZE")


def gpt() -> kiln.nn.Module:
    nn, F = kiln.nn, kiln.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBED, 3 * EMBED)
            self.c_proj = nn.Linear(EMBED, EMBED)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(EMBED, dim=2)
            q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(EMBED)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(EMBED)
            self.mlp = nn.Sequential(nn.Linear(EMBED, 4 * EMBED), nn.GELU(), nn.Linear(4 * EMBED, EMBED))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, EMBED)
            self.wpe = nn.Embedding(BLOCK, EMBED)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(EMBED)
            self.lm_head = nn.Linear(EMBED, VOCAB, bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx, targets, pos):
            x = self.wte(idx) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))

    return GPT()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def sample() -> dict[str, int]:
    gc.collect()
    stats = kiln.memory_stats()
    return {"allocated": stats["allocated_bytes.all.current"], "allocations": stats["allocation.all.current"],
            "reserved": stats["reserved_bytes.all.current"], "rss": rss_bytes()}


def soak(mode: str, seconds: float, warmup: int, rss_slack: int, min_steps: int = 3, seed: int = 0) -> list[str]:
    """Trains for `seconds` (and at least `min_steps` steps) after `warmup` steps; returns the
    problems found (empty: no growth)."""
    kiln.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = gpt()
    step_model = kiln.compile(model) if mode == "compiled" else model
    params = list(model.parameters())
    optimizer = kiln.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                                 lr=1e-3, betas=(0.9, 0.95))
    pos = kiln.arange(0, BLOCK, dtype=kiln.long)

    def step() -> float:
        data = kiln.tensor(rng.integers(0, VOCAB, (BATCH, BLOCK + 1)))
        optimizer.zero_grad(set_to_none=True)
        loss = step_model(data[:, :-1], data[:, 1:], pos)
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(warmup):
        step()
    warm_reserved_peak = kiln.memory_stats()["reserved_bytes.all.peak"]
    first = sample()
    steps, problems = 0, []
    deadline = time.monotonic() + seconds
    last = first
    while time.monotonic() < deadline or steps < min_steps:
        loss = step()
        steps += 1
        last = sample()
        if (last["allocated"], last["allocations"]) != (first["allocated"], first["allocations"]):
            problems.append(f"{mode}: step {warmup + steps}: live memory {last['allocated']} bytes in "
                            f"{last['allocations']} allocations, was {first['allocated']} in {first['allocations']}")
            break
        if last["reserved"] > warm_reserved_peak:
            problems.append(f"{mode}: step {warmup + steps}: reserved {last['reserved']} bytes, above the "
                            f"warm-up peak {warm_reserved_peak}")
            break
    if last["rss"] - first["rss"] > rss_slack:
        problems.append(f"{mode}: RSS grew {(last['rss'] - first['rss']) / 2**20:.1f} MiB over {steps} steps")
    print(f"soak {mode}: {steps} steps after {warmup} warm-up, loss {loss:.3f}; live "
          f"{last['allocated']} bytes / {last['allocations']} allocations, reserved {last['reserved']}, "
          f"RSS {first['rss'] / 2**20:.1f} -> {last['rss'] / 2**20:.1f} MiB")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds per mode after warm-up")
    parser.add_argument("--mode", choices=["eager", "compiled", "both"], default="both")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rss-slack-mib", type=float, default=16.0)
    args = parser.parse_args()
    modes = ["eager", "compiled"] if args.mode == "both" else [args.mode]
    problems = []
    for mode in modes:
        problems += soak(mode, args.seconds, args.warmup, int(args.rss_slack_mib * 2**20))
    for problem in problems:
        print("soak: GROWTH:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
