"""kiln.nn.parallel.DistributedDataParallel on 2 processes over loopback: training the
seed MLP (and a GPT-style block) on each rank's shard gives identical weights on every rank, equal to one
process (kiln, and torch) training on the full batch; no_sync accumulation, several
buckets, gradients as bucket views, compiled models inside and outside DDP,
ZeroRedundancyOptimizer, unused parameters, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import distributed_workers as workers
import kiln
from distributed_ranks import run_ranks

STEPS = 3


def _reference(initial: list, loss_scale: float, framework, momentum: float = 0.0, kind: str = "mlp") -> list:
    """Full-batch SGD in one process (kiln or torch) from the given weights."""
    model, x_shape, y_shape = workers.model_and_batch_shapes(framework.nn, kind)
    model = model.double()
    with framework.no_grad():
        for p, values in zip(model.parameters(), initial):
            p.copy_(framework.tensor(values, dtype=framework.float64))
    optimizer = framework.optim.SGD(model.parameters(), lr=workers.LR, momentum=momentum)
    x, y = workers.full_batch()
    xs = framework.tensor(x.tolist(), dtype=framework.float64).reshape(-1, *x_shape)
    ys = framework.tensor(y.tolist(), dtype=framework.float64).reshape(-1, *y_shape)
    for _ in range(STEPS):
        optimizer.zero_grad()
        (framework.nn.functional.mse_loss(model(xs), ys) * loss_scale).backward()
        optimizer.step()
    return [p.detach().tolist() for p in model.parameters()]


def _assert_close(got: list, expected: list, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=atol)


VARIANTS = {
    "one-bucket": {},
    "many-buckets": {"bucket_cap_mb": 1e-4},  # one bucket per parameter: several all-reduces in flight
    "bucket-views": {"gradient_as_bucket_view": True, "bucket_cap_mb": 1e-4},
    "no_sync": {"micro_batches": 3},  # gradient accumulation: two backwards under no_sync, then one that syncs
    "compiled-inside": {"compile": "inside"},  # DDP(kiln.compile(model)): the all-reduce outside the fused graphs
    "compiled-outside": {"compile": "outside"},  # kiln.compile(DDP(model))
    "zero": {"zero": True},  # ZeroRedundancyOptimizer: SGD's momentum sharded across the ranks
    "gpt": {"model": "gpt", "bucket_cap_mb": 1e-4},  # a GPT-style block: LayerNorm, causal attention, GELU MLP
    # Communication hooks (register_comm_hook): torch's default hooks, and a custom one on 4 buckets.
    "hook-allreduce": {"hook": "allreduce_hook", "bucket_cap_mb": 1e-4},
    "hook-fp16": {"hook": "fp16_compress_hook"},
    "hook-bf16": {"hook": "bf16_compress_hook", "bucket_cap_mb": 1e-4},
    "hook-counting": {"hook": "counting", "bucket_cap_mb": 1e-4},
    "hook-fp16-wrapper": {"hook": "fp16_compress_wrapper(allreduce_hook)"},  # a float16 result, float64 grads
    "hook-compiled-inside": {"hook": "allreduce_hook", "compile": "inside"},  # DDP(compile(model)) with a hook
}
# The compressing hooks all-reduce float16/bfloat16 copies of the gradients: close to the exact result.
TOLERANCE = {"hook-fp16": (2e-3, 1e-3), "hook-fp16-wrapper": (2e-3, 1e-3), "hook-bf16": (2e-2, 1e-2)}


@pytest.fixture(scope="module")
def ranks():
    """One 2-rank job runs every DDP case (process start-up dominates these tests' time)."""
    return run_ranks(workers.ddp_jobs, 2, STEPS, VARIANTS, timeout=90)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ddp_training_equals_full_batch_training(ranks, variant):
    micro_batches = VARIANTS[variant].get("micro_batches", 1)
    first, second = ranks[0][variant], ranks[1][variant]
    assert first["initial"] == second["initial"], "construction did not broadcast rank 0's parameters"
    assert first["final"] == second["final"], "ranks ended with different parameters"
    assert first["final"] != first["initial"]
    momentum = workers.MOMENTUM if VARIANTS[variant].get("zero") else 0.0
    kind = VARIANTS[variant].get("model", "mlp")
    rtol, atol = TOLERANCE.get(variant, (1e-10, 1e-12))
    _assert_close(first["final"], _reference(first["initial"], micro_batches, kiln, momentum, kind), rtol, atol)
    _assert_close(first["final"], _reference(first["initial"], micro_batches, torch, momentum, kind), rtol, atol)
    if "compile" in VARIANTS[variant]:  # one captured entry, run as fused kernels (not the interpreter)
        assert len(first["kernels"]) == 1 and first["kernels"][0], first["kernels"]
    if variant.startswith("hook"):  # the same weights as DDP without a hook
        _assert_close(first["final"], ranks[0]["one-bucket"]["final"], rtol, atol)
    if VARIANTS[variant].get("zero"):
        assert sorted([first["shard"], second["shard"]]) == [1, 3]  # weight0 (128) | weight2, bias0, bias2 (84)
    if kind == "gpt":
        return
    prefix = "module._orig_mod." if VARIANTS[variant].get("compile") == "inside" else "module."
    assert first["keys"] == [prefix + key for key in ("0.weight", "0.bias", "2.weight", "2.bias")]


def test_ddp_custom_comm_hook_runs_once_per_bucket_per_step(ranks):
    for rank in ranks:
        result = rank["hook-counting"]
        n = result["buckets"]
        assert n == 4  # one bucket per parameter (bucket_cap_mb=1e-4)
        # [index, is_last, parameters, gradients() shaped as parameters(), buffer holds them all]
        assert result["hook_calls"] == [[i, i == n - 1, 1, True, True] for _ in range(STEPS) for i in range(n)]
    assert not ranks[0]["one-bucket"]["hook_calls"]


def test_ddp_unused_parameters(ranks):
    ranks = [rank["unused"] for rank in ranks]
    assert ranks[0]["grads"] == ranks[1]["grads"]
    # extra.weight's gradient: rank 0's (h summed over the batch), averaged with rank 1's zero.
    assert ranks[0]["grads"]["extra.weight"] is not None and ranks[0]["grads"]["extra.bias"] == [1.0]
    for rank in ranks:
        assert "Expected to have finished reduction in the prior iteration" in rank["error"]
        assert "extra.weight" in rank["error"]


def test_ddp_needs_a_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        kiln.nn.parallel.DistributedDataParallel(kiln.nn.Linear(2, 2))
