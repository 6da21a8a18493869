"""What the ranks of the NCCL device tests run (tests/python/distributed/test_nccl_device.py): rank r
on cuda:r, collectives against numpy. Returns the list of failure messages. kiln and numpy only."""

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
