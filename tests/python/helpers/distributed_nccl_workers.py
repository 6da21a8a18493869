"""What the ranks of the NCCL tests run: on GPUs (tests/python/distributed/test_nccl_device.py: rank r
on cuda:r, collectives against numpy; returns the list of failure messages) and on the stand-in GPU
and NCCL (test_nccl_emulated_ranks.py: complex collectives and DistributedDataParallel; returns what
each rank got). kiln and numpy only."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

import kiln
import kiln.distributed as dist


def _values(rank: int, n: int) -> np.ndarray:
    return ((np.arange(n) * 3 + rank * 5) % 4 + 1).astype(np.float64)


def _cuda(values, dtype: str, rank: int):
    return kiln.tensor(np.asarray(values, dtype=np.float64).tolist(), dtype=getattr(kiln, dtype)).to(f"cuda:{rank}")


def _host(t) -> np.ndarray:
    return np.asarray(t.detach().to(kiln.float64).cpu().reshape(-1).tolist(), dtype=np.float64)


def two_rank_table(rank: int, world: int) -> list:
    kiln.cuda.set_device(rank)
    dist.init_process_group("nccl", timeout=timedelta(seconds=60), device_id=kiln.device(f"cuda:{rank}"))
    failures: list[str] = []

    def check(what, got, expected, tol=0.0):
        if not np.allclose(got, expected, rtol=tol, atol=tol):
            failures.append(f"{what}: got {got.tolist()[:8]}, expected {expected.tolist()[:8]}")

    everyone = lambda n: np.stack([_values(r, n) for r in range(world)])  # noqa: E731
    for dtype in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"):
        tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-6
        for n in (0, 7, 100_000):
            ops = {"SUM": everyone(n).sum(0), "PRODUCT": everyone(n).prod(0), "MIN": everyone(n).min(0),
                   "MAX": everyone(n).max(0)}
            if dtype.startswith(("float", "bfloat")):
                ops["AVG"] = everyone(n).mean(0)
            for op, expected in ops.items():
                t = _cuda(_values(rank, n), dtype, rank)
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                check(f"all_reduce {op} {dtype} n={n}", _host(t), expected, tol)
            t = _cuda(_values(rank, n), dtype, rank)
            dist.broadcast(t, src=1)
            check(f"broadcast {dtype} n={n}", _host(t), _values(1, n))
            outs = [_cuda(np.zeros(n), dtype, rank) for _ in range(world)]
            dist.all_gather(outs, _cuda(_values(rank, n), dtype, rank))
            check(f"all_gather {dtype} n={n}", np.concatenate([_host(o) for o in outs]), everyone(n).reshape(-1))
            out = _cuda(np.zeros(n), dtype, rank)
            dist.reduce_scatter_tensor(out, _cuda(np.tile(_values(rank, n), world), dtype, rank))
            check(f"reduce_scatter_tensor {dtype} n={n}", _host(out), everyone(n).sum(0), tol)
            t = _cuda(_values(rank, n), dtype, rank)
            dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
            check(f"reduce {dtype} n={n}", _host(t), everyone(n).max(0) if rank == 0 else _values(rank, n))
    gathered = [_cuda(np.zeros(3), "float32", rank) for _ in range(world)] if rank == 0 else None
    dist.gather(_cuda(_values(rank, 3), "float32", rank), gathered, dst=0)
    if rank == 0:
        check("gather", np.concatenate([_host(g) for g in gathered]), everyone(3).reshape(-1))
    out = _cuda(np.zeros(3), "float32", rank)
    dist.scatter(out, [_cuda(_values(r, 3), "float32", rank) for r in range(world)] if rank == 0 else None, src=0)
    check("scatter", _host(out), _values(rank, 3))
    out = _cuda(np.zeros(2 * world), "float32", rank)
    dist.all_to_all_single(out, _cuda(np.arange(2 * world) + 10 * rank, "float32", rank))
    check("all_to_all_single", _host(out), np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 10 * r
                                                           for r in range(world)]))
    t = _cuda(np.full(5, rank), "float32", rank)
    if rank == 0:
        dist.send(t, dst=1)
    else:
        if dist.recv(t, src=0) != 0:
            failures.append("recv returned the wrong source")
        check("send/recv", _host(t), np.zeros(5))
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    if objects != [{"rank": r} for r in range(world)]:
        failures.append(f"all_gather_object: {objects}")
    work = dist.all_reduce(_cuda(np.ones(1 << 20), "float32", rank), async_op=True)
    work.wait()
    dist.barrier()
    dist.destroy_process_group()
    return failures


# --- on the stand-in GPU and NCCL (tests/python/distributed/test_nccl_emulated_ranks.py) -----------
# Only copies run there (no kernels): tensors go to the "GPU" and back, collectives combine them on
# the host (helpers/emulated_nccl.py's Note [NCCL across emulated ranks]).

EMULATED_BATCH = 8  # rows of the full batch; each of the 2 ranks trains on half


def emulated_batch() -> tuple[np.ndarray, np.ndarray]:
    rows = np.arange(EMULATED_BATCH * 4, dtype=np.float64).reshape(EMULATED_BATCH, 4)
    return np.sin(rows * 0.37), np.cos(rows[:, :2] * 0.11)


def emulated_initial_weights(seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * 0.5 for shape in ((8, 4), (8,), (2, 8), (2,))]


class _HostComputedMLP(kiln.nn.Module):
    """Parameters on the GPU, arithmetic on the host: the stand-in GPU runs copies only."""

    def __init__(self, weights: list, device: str) -> None:
        super().__init__()
        tensors = [kiln.tensor(w.tolist(), dtype=kiln.float64).to(device) for w in weights]
        self.w1, self.b1, self.w2, self.b2 = (kiln.nn.Parameter(t) for t in tensors)

    def forward(self, x):
        w1, b1, w2, b2 = (p.to("cpu") for p in (self.w1, self.b1, self.w2, self.b2))
        return kiln.nn.functional.linear(kiln.tanh(kiln.nn.functional.linear(x, w1, b1)), w2, b2)


def _complex_values(rank: int, n: int) -> np.ndarray:
    k = np.arange(n)
    return (k % 3 + rank) + 1j * (k % 4 - 2 * rank)


def emulated_nccl_job(rank: int, world: int, init_file: str) -> dict:
    """Complex collectives and DistributedDataParallel over backend="nccl" on the stand-ins."""
    from kiln.nn.parallel import DistributedDataParallel
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30), device_id=kiln.device("cuda:0"))
    out: dict = {"complex": {}}
    for dtype in ("complex64", "complex128"):
        def cuda(values, dtype=dtype):
            return kiln.tensor(np.asarray(values).tolist(), dtype=getattr(kiln, dtype)).to("cuda:0")
        got = out["complex"][dtype] = {}
        t = cuda(_complex_values(rank, 5))
        dist.all_reduce(t)
        got["all_reduce SUM"] = t.cpu().tolist()
        t = cuda(_complex_values(rank, 5))
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        got["all_reduce AVG"] = t.cpu().tolist()
        t = cuda(_complex_values(rank, 3))
        dist.broadcast(t, src=1)
        got["broadcast"] = t.cpu().tolist()
        outs = [cuda(np.zeros(3, dtype=complex)) for _ in range(world)]
        dist.all_gather(outs, cuda(_complex_values(rank, 3)))
        got["all_gather"] = [o.cpu().tolist() for o in outs]
        t = cuda(_complex_values(rank, 2 * world))
        piece = cuda(np.zeros(2, dtype=complex))
        dist.reduce_scatter_tensor(piece, t)
        got["reduce_scatter_tensor"] = piece.cpu().tolist()
    try:
        dist.all_reduce(cuda(_complex_values(rank, 2)), op=dist.ReduceOp.MAX)
        out["complex_max"] = None
    except RuntimeError as e:
        out["complex_max"] = str(e)

    x, y = emulated_batch()
    half = EMULATED_BATCH // world
    xs = kiln.tensor(x[rank * half:(rank + 1) * half].tolist(), dtype=kiln.float64)
    ys = kiln.tensor(y[rank * half:(rank + 1) * half].tolist(), dtype=kiln.float64)
    out["ddp"] = {}
    variants = {"one bucket": {}, "a bucket per parameter, unused-parameter search, bucket views":
                {"bucket_cap_mb": 1e-4, "find_unused_parameters": True, "gradient_as_bucket_view": True}}
    for name, options in variants.items():
        model = _HostComputedMLP(emulated_initial_weights(seed=rank), "cuda:0")  # rank 0's win the broadcast
        ddp = DistributedDataParallel(model, device_ids=[0], **options)
        result = out["ddp"][name] = {"buckets": len(ddp._buckets), "device_ids": ddp.device_ids,
                                     "initial": [p.detach().cpu().tolist() for p in model.parameters()],
                                     "grads": [], "launched_in_backward": []}
        # How many bucket all-reduces the gradient hooks launched before backward's final callback.
        finish_reduction = ddp._finish_reduction

        def counted_finish(finish_reduction=finish_reduction, ddp=ddp, result=result):
            result["launched_in_backward"].append(len(ddp._works))
            finish_reduction()
        object.__setattr__(ddp, "_finish_reduction", counted_finish)
        for _ in range(2):
            model.zero_grad(set_to_none=True)
            loss = ((ddp(xs) - ys) ** 2).mean()
            loss.backward()
            result["grads"].append([p.grad.cpu().tolist() for p in model.parameters()])
            result["grad_devices"] = sorted({str(p.grad.device) for p in model.parameters()})
    dist.destroy_process_group()
    return out
