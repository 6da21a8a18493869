"""backend="nccl" on 2 processes without a GPU, on helpers/emulated_nccl.py's stand-ins (a CUDA
driver whose memory is host memory, and an NCCL whose ranks meet through files: Note [NCCL across
emulated ranks]). Complex tensors go through ProcessGroupNCCL as pairs of reals: all_reduce (SUM,
AVG), broadcast, all_gather and reduce_scatter_tensor against numpy's sums over the ranks; MAX is
refused. DistributedDataParallel on the NCCL group (parameters on the "GPU"; every bucket's
all-reduce launched by the gradient hooks during backward, on the group's stream): every rank
starts from rank 0's weights and gets the gradients of one process on the full batch (torch, the
oracle), with one bucket and with a bucket per parameter, the unused-parameter search and
gradients as bucket views. The stand-in runs copies only, so the model computes on the host from
copies of its parameters."""

from __future__ import annotations

import numpy as np
import torch

import distributed_nccl_workers as workers
from distributed_ranks import run_ranks
from emulated_nccl import RANKS_NCCL, build

WORLD = 2


def _job(tmp_path, monkeypatch):
    for name, value in build(tmp_path, RANKS_NCCL).items():
        monkeypatch.setenv(name, value)
    (tmp_path / "calls").mkdir()
    monkeypatch.setenv("FAKE_NCCL_DIR", str(tmp_path / "calls"))
    return run_ranks(workers.emulated_nccl_job, WORLD, str(tmp_path / "init"), timeout=120)


def _reference_grads(weights: list) -> list:
    """The gradients of the mean squared error over the full batch, in one torch process."""
    params = [torch.tensor(w, dtype=torch.float64, requires_grad=True) for w in weights]
    w1, b1, w2, b2 = params
    x, y = (torch.tensor(a) for a in workers.emulated_batch())
    out = torch.nn.functional.linear(torch.tanh(torch.nn.functional.linear(x, w1, b1)), w2, b2)
    ((out - y) ** 2).mean().backward()
    return [p.grad.numpy() for p in params]


def test_complex_collectives_and_ddp_on_two_emulated_nccl_ranks(tmp_path, monkeypatch):
    results = _job(tmp_path, monkeypatch)

    everyone = lambda n: np.stack([workers._complex_values(r, n) for r in range(WORLD)])  # noqa: E731
    for rank, got in enumerate(results):
        for dtype, values in got["complex"].items():
            expected = {"all_reduce SUM": everyone(5).sum(0), "all_reduce AVG": everyone(5).mean(0),
                        "broadcast": workers._complex_values(1, 3), "all_gather": everyone(3),
                        "reduce_scatter_tensor": everyone(2 * WORLD).sum(0)[2 * rank:2 * rank + 2]}
            for what, want in expected.items():
                np.testing.assert_allclose(np.asarray(values[what]), want, rtol=1e-6,
                                           err_msg=f"rank {rank} {dtype} {what}")
        assert "ReduceOp.MAX is not supported for complex tensors" in got["complex_max"]

    initial = workers.emulated_initial_weights(seed=0)
    reference = _reference_grads(initial)
    for name in results[0]["ddp"]:
        for rank, got in enumerate(results):
            ddp = got["ddp"][name]
            assert ddp["device_ids"] == [0] and ddp["grad_devices"] == ["cuda:0"], (name, rank)
            # Every bucket was launched from the gradient hooks, during backward (the overlap).
            assert ddp["launched_in_backward"] == [ddp["buckets"]] * 2, (name, rank)
            for p, want in zip(ddp["initial"], initial):
                np.testing.assert_array_equal(np.asarray(p), want, err_msg=f"{name}: rank {rank}'s start")
            for step, grads in enumerate(ddp["grads"]):
                for g, want in zip(grads, reference):
                    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-14,
                                               err_msg=f"{name}: rank {rank}, backward {step}")
    assert results[0]["ddp"]["one bucket"]["buckets"] == 1
    assert results[0]["ddp"]["a bucket per parameter, unused-parameter search, bucket views"]["buckets"] == 4
