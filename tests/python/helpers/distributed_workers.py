"""What the ranks of the kiln.distributed tests run (helpers/distributed_ranks.py starts them).

Each function takes ``(rank, world_size, ...)``, joins the job, runs its checks against
numpy references computed on the spot, and returns what the test asserts on: for the
collective table, ``{category: [failure messages]}``. kiln and numpy only (no torch).
"""

from __future__ import annotations

import os
from datetime import timedelta

import numpy as np

import kiln
import kiln.distributed as dist

TIMEOUT = timedelta(seconds=20)

# Collective categories the table covers; tests/python/distributed/test_collectives.py asserts each.
CATEGORIES = ("all_reduce", "async", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
              "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "send_recv", "barrier", "objects",
              "new_group")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8")
SIZES = (0, 1, 7, 1000)
OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX")


def _values(rank: int, n: int, dtype: str, salt: int = 0) -> np.ndarray:
    """Small integers (exact in every dtype, products included), different on every rank."""
    return ((np.arange(n) * 3 + rank * 5 + salt) % 4 + 1).astype(np.float64)


def _kiln(values: np.ndarray, dtype: str, noncontiguous: bool = False):
    t = kiln.tensor(values.tolist(), dtype=getattr(kiln, dtype)) if values.size else kiln.zeros(
        0, dtype=getattr(kiln, dtype))
    if noncontiguous and values.size % 2 == 0 and values.size:
        t = t.reshape(2, -1).t().contiguous().t()  # same values, column-major strides
        assert not t.is_contiguous()
    return t


def _numpy(t) -> np.ndarray:
    return np.asarray(t.detach().to(kiln.float64).reshape(-1).tolist(), dtype=np.float64)


def _reduce(arrays: list, op: str) -> np.ndarray:
    stack = np.stack(arrays)
    return {"SUM": stack.sum(0), "AVG": stack.sum(0) / len(arrays), "PRODUCT": stack.prod(0),
            "MIN": stack.min(0), "MAX": stack.max(0)}[op]


class _Checks:
    def __init__(self) -> None:
        self.failures = {name: [] for name in CATEGORIES}

    def equal(self, category: str, what: str, got, expected, tolerance: float = 0.0) -> None:
        got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=tolerance, atol=tolerance):
            self.failures[category].append(f"{what}: got {got.tolist()[:8]}, expected {expected.tolist()[:8]}")

    def run(self, category: str, what: str, fn) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001  (recorded: the test names it)
            self.failures[category].append(f"{what}: raised {type(e).__name__}: {e}")


def collective_table(rank: int, world: int) -> dict:
    """Every collective, ReduceOp, dtype and size (0-size and non-contiguous included) against numpy."""
    dist.init_process_group("gloo", timeout=TIMEOUT)
    c = _Checks()
    everyone = lambda n, dtype, salt=0: [_values(r, n, dtype, salt) for r in range(world)]  # noqa: E731
    for dtype in DTYPES:
        tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-6
        for n in SIZES:
            for nc in (False, True):
                tag = f"{dtype} n={n}{' non-contiguous' if nc else ''}"
                for op in OPS:
                    if op == "AVG" and not dtype.startswith(("float", "bfloat")):
                        continue
                    def all_reduce_case(op=op):
                        t = _kiln(_values(rank, n, dtype), dtype, nc)
                        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                        c.equal("all_reduce", f"{op} {tag}", _numpy(t), _reduce(everyone(n, dtype), op), tol)
                    c.run("all_reduce", f"{op} {tag}", all_reduce_case)

                def broadcast_case():
                    src = world - 1
                    t = _kiln(_values(rank, n, dtype), dtype, nc)
                    dist.broadcast(t, src=src)
                    c.equal("broadcast", tag, _numpy(t), _values(src, n, dtype))
                c.run("broadcast", tag, broadcast_case)

                def all_gather_case():
                    outs = [_kiln(np.zeros(n), dtype, nc) for _ in range(world)]
                    dist.all_gather(outs, _kiln(_values(rank, n, dtype), dtype, nc))
                    for r in range(world):
                        c.equal("all_gather", f"{tag} from rank {r}", _numpy(outs[r]), _values(r, n, dtype))
                    out = kiln.zeros(world * n, dtype=getattr(kiln, dtype))
                    dist.all_gather_into_tensor(out, _kiln(_values(rank, n, dtype), dtype, nc))
                    c.equal("all_gather_into_tensor", tag, _numpy(out), np.concatenate(everyone(n, dtype)))
                    stacked = kiln.zeros(world, n, dtype=getattr(kiln, dtype))
                    dist.all_gather_into_tensor(stacked, _kiln(_values(rank, n, dtype), dtype))
                    c.equal("all_gather_into_tensor", f"{tag} stacked", _numpy(stacked),
                            np.concatenate(everyone(n, dtype)))
                c.run("all_gather", tag, all_gather_case)

                def reduce_scatter_case():
                    op = "SUM"
                    inputs = [_kiln(_values(rank, n, dtype, salt=r), dtype, nc) for r in range(world)]
                    out = _kiln(np.zeros(n), dtype, nc)
                    dist.reduce_scatter(out, inputs, op=dist.ReduceOp.SUM)
                    expected = _reduce([_values(r, n, dtype, salt=rank) for r in range(world)], op)
                    c.equal("reduce_scatter", tag, _numpy(out), expected, tol)
                    flat = _kiln(np.concatenate([_values(rank, n, dtype, salt=r) for r in range(world)]), dtype)
                    out = kiln.zeros(n, dtype=getattr(kiln, dtype))
                    dist.reduce_scatter_tensor(out, flat, op=dist.ReduceOp.MAX)
                    c.equal("reduce_scatter_tensor", tag, _numpy(out),
                            _reduce([_values(r, n, dtype, salt=rank) for r in range(world)], "MAX"), tol)
                c.run("reduce_scatter", tag, reduce_scatter_case)

                def gather_scatter_case():
                    dst = world - 1
                    outs = [_kiln(np.zeros(n), dtype, nc) for _ in range(world)] if rank == dst else None
                    dist.gather(_kiln(_values(rank, n, dtype), dtype, nc), outs, dst=dst)
                    if rank == dst:
                        for r in range(world):
                            c.equal("gather", f"{tag} from rank {r}", _numpy(outs[r]), _values(r, n, dtype))
                    pieces = None
                    if rank == 0:
                        pieces = [_kiln(_values(0, n, dtype, salt=r), dtype, nc) for r in range(world)]
                    out = _kiln(np.zeros(n), dtype, nc)
                    dist.scatter(out, pieces, src=0)
                    c.equal("scatter", tag, _numpy(out), _values(0, n, dtype, salt=rank))
                c.run("gather", tag, gather_scatter_case)

                def reduce_case():
                    t = _kiln(_values(rank, n, dtype), dtype, nc)
                    dist.reduce(t, dst=1, op=dist.ReduceOp.MAX)
                    expected = _reduce(everyone(n, dtype), "MAX") if rank == 1 else _values(rank, n, dtype)
                    c.equal("reduce", tag, _numpy(t), expected)
                c.run("reduce", tag, reduce_case)

    def bool_and_complex_case():
        flags = kiln.tensor([rank == 0, True, False, rank == 1])
        anyone, everyone_ = flags.clone(), flags.clone()
        dist.all_reduce(anyone, op=dist.ReduceOp.MAX)
        dist.all_reduce(everyone_, op=dist.ReduceOp.MIN)
        c.equal("all_reduce", "bool MAX (any)", _numpy(anyone), [1, 1, 0, 1])
        c.equal("all_reduce", "bool MIN (all)", _numpy(everyone_), [0, 1, 0, 0])
        z = kiln.tensor([complex(rank, 1), complex(1, -rank)], dtype=kiln.complex64)
        dist.all_reduce(z, op=dist.ReduceOp.AVG)
        got = np.asarray(z.tolist(), dtype=np.complex128)
        expected = np.array([complex(sum(range(world)), world), complex(world, -sum(range(world)))]) / world
        if not np.allclose(got, expected, atol=1e-6):
            c.failures["all_reduce"].append(f"complex64 AVG: got {got}, expected {expected}")
    c.run("all_reduce", "bool and complex", bool_and_complex_case)

    def complex_values(r: int, n: int) -> np.ndarray:
        k = np.arange(n)
        return (k % 3 + r) + 1j * (k % 4 - 2 * r)

    def complex_tensor(values: np.ndarray, dtype: str, noncontiguous: bool):
        t = kiln.tensor(values.tolist(), dtype=getattr(kiln, dtype)) if values.size else kiln.zeros(
            0, dtype=getattr(kiln, dtype))
        if noncontiguous:
            t = t.reshape(2, -1).t().contiguous().t()
            assert not t.is_contiguous()
        return t

    def complex_equal(category: str, what: str, got, expected) -> None:
        got = np.asarray(got.reshape(-1).tolist() if hasattr(got, "reshape") else got, dtype=np.complex128)
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
            c.failures[category].append(f"{what}: got {got.tolist()[:6]}, expected {expected.tolist()[:6]}")

    for dtype in ("complex64", "complex128"):
        for n, noncontiguous in ((0, False), (5, False), (8, True)):
            tag = f"{dtype} n={n}{' non-contiguous' if noncontiguous else ''}"
            everyone_z = np.stack([complex_values(r, n) for r in range(world)])

            def complex_case(dtype=dtype, n=n, noncontiguous=noncontiguous, tag=tag, everyone_z=everyone_z):
                for op, expected in (("SUM", everyone_z.sum(0)), ("AVG", everyone_z.mean(0))):
                    t = complex_tensor(complex_values(rank, n), dtype, noncontiguous)
                    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                    complex_equal("all_reduce", f"{tag} {op}", t, expected)
                t = complex_tensor(complex_values(rank, n), dtype, noncontiguous)
                dist.all_reduce(t, async_op=True).wait()
                complex_equal("async", f"{tag} SUM", t, everyone_z.sum(0))
                t = complex_tensor(complex_values(rank, n), dtype, noncontiguous)
                dist.broadcast(t, src=world - 1)
                complex_equal("broadcast", tag, t, complex_values(world - 1, n))
                outs = [complex_tensor(np.zeros(n, dtype=complex), dtype, noncontiguous) for _ in range(world)]
                dist.all_gather(outs, complex_tensor(complex_values(rank, n), dtype, noncontiguous))
                complex_equal("all_gather", tag, np.concatenate([np.asarray(o.reshape(-1).tolist()) for o in outs])
                              if n else np.zeros(0, dtype=complex), everyone_z.reshape(-1))
            c.run("all_reduce", f"complex {tag}", complex_case)

    def all_to_all_case():
        n = 2
        inp = _kiln(np.concatenate([_values(rank, n, "float32", salt=r) for r in range(world)]), "float32")
        out = kiln.zeros(world * n)
        dist.all_to_all_single(out, inp)
        c.equal("all_to_all_single", "float32", _numpy(out),
                np.concatenate([_values(r, n, "float32", salt=rank) for r in range(world)]))
    c.run("all_to_all_single", "float32", all_to_all_case)

    def async_case():
        t = _kiln(_values(rank, 6, "float64"), "float64", noncontiguous=True)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        c.equal("async", "all_reduce non-contiguous", _numpy(t), _reduce(everyone(6, "float64"), "SUM"))
        if not work.is_completed():
            c.failures["async"].append("is_completed() is False after wait()")
        works = [dist.broadcast(kiln.ones(3) * rank, src=0, async_op=True) for _ in range(3)]
        outs = [kiln.zeros(4) for _ in range(world)]
        works.append(dist.all_gather(outs, kiln.ones(4) * rank, async_op=True))
        for w in works:
            w.wait()
        c.equal("async", "all_gather after broadcasts", _numpy(kiln.stack(outs)),
                np.repeat(np.arange(world, dtype=np.float64), 4))
        barrier = dist.barrier(async_op=True)
        barrier.wait()
    c.run("async", "handles", async_case)

    def blocking_behind_async_case():
        # Note [Blocking calls on an idle group]: a blocking call made while async work is queued or
        # running waits its turn; one on an idle group runs on this thread. Both keep the call order.
        big = _kiln(_values(rank, 200_000, "float32"), "float32")
        pending = dist.all_reduce(big, async_op=True)
        small = _kiln(_values(rank, 7, "float64"), "float64")
        dist.all_reduce(small)  # queued behind `big` (or runs here if it already finished)
        c.equal("async", "blocking all_reduce behind an async one", _numpy(small),
                _reduce(everyone(7, "float64"), "SUM"))
        root = kiln.ones(3) * rank
        dist.broadcast(root, src=world - 1)
        pending.wait()
        c.equal("async", "the async all_reduce before them", _numpy(big), _reduce(everyone(200_000, "float32"), "SUM"))
        c.equal("async", "blocking broadcast after them", _numpy(root), np.full(3, world - 1.0))
        idle = _kiln(_values(rank, 5, "int64"), "int64")
        dist.all_reduce(idle, op=dist.ReduceOp.MAX)  # an idle group: on this thread
        c.equal("async", "blocking all_reduce on an idle group", _numpy(idle), _reduce(everyone(5, "int64"), "MAX"))
    c.run("async", "blocking calls behind async ones", blocking_behind_async_case)

    def send_recv_case():
        right, left = (rank + 1) % world, (rank - 1) % world
        out = kiln.zeros(5)
        if rank % 2 == 0:
            dist.send(kiln.ones(5) * rank, dst=right)
            sender = dist.recv(out, src=left)
        else:
            sender = dist.recv(out, src=left)
            dist.send(kiln.ones(5) * rank, dst=right)
        c.equal("send_recv", "ring", _numpy(out), np.full(5, left))
        if sender != left:
            c.failures["send_recv"].append(f"recv returned {sender}, expected {left}")
        # isend/irecv, a receive from any source, and a user tag.
        if rank == 0:
            got = kiln.zeros(3)
            sender = dist.recv(got, tag=7)
            c.equal("send_recv", "any source", _numpy(got), np.full(3, float(sender)))
        elif rank == 1:
            dist.isend(kiln.ones(3), dst=0, tag=7).wait()
    c.run("send_recv", "ring", send_recv_case)

    c.run("barrier", "barrier", lambda: [dist.barrier() for _ in range(2)])

    def objects_case():
        gathered = [None] * world
        dist.all_gather_object(gathered, {"rank": rank, "text": "x" * rank})
        if gathered != [{"rank": r, "text": "x" * r} for r in range(world)]:
            c.failures["objects"].append(f"all_gather_object: {gathered}")
        items = [("a", rank), [1, 2, rank], None] if rank == 1 else [None, None, None]
        dist.broadcast_object_list(items, src=1)
        if items != [("a", 1), [1, 2, 1], None]:
            c.failures["objects"].append(f"broadcast_object_list: {items}")
        at_root = [None] * world if rank == 0 else None
        dist.gather_object(rank * 10, at_root, dst=0)
        if rank == 0 and at_root != [r * 10 for r in range(world)]:
            c.failures["objects"].append(f"gather_object: {at_root}")
        out = [None]
        dist.scatter_object_list(out, [f"to {r}" for r in range(world)] if rank == 0 else None, src=0)
        if out != [f"to {rank}"]:
            c.failures["objects"].append(f"scatter_object_list: {out}")
    c.run("objects", "objects", objects_case)

    def new_group_case():
        members = [0, world - 1]
        group = dist.new_group(members)
        if rank in members:
            t = kiln.ones(2) * (rank + 1)
            dist.all_reduce(t, group=group)
            c.equal("new_group", "all_reduce in [0, last]", _numpy(t), np.full(2, 1 + world))
            if dist.get_rank(group) != members.index(rank) or dist.get_world_size(group) != 2:
                c.failures["new_group"].append(f"rank/size in group: {dist.get_rank(group)}")
            t = kiln.ones(2) * rank
            dist.broadcast(t, src=world - 1, group=group)
            c.equal("new_group", "broadcast from global rank", _numpy(t), np.full(2, world - 1))
            dist.destroy_process_group(group)
        elif group is not dist.GroupMember.NON_GROUP_MEMBER or dist.get_rank(group) != -1:
            c.failures["new_group"].append("a non-member did not get NON_GROUP_MEMBER")
    c.run("new_group", "subgroup", new_group_case)

    c.run("barrier", "the last barrier", dist.barrier)
    dist.destroy_process_group()
    return c.failures


def init_methods(rank: int, world: int, tcp_port: int, file_path: str) -> list:
    """tcp:// and file:// rendezvous, explicit rank and world size, and a store passed in."""
    seen = []
    for method in (f"tcp://127.0.0.1:{tcp_port}", f"file://{file_path}"):
        dist.init_process_group("gloo", init_method=method, rank=rank, world_size=world, timeout=TIMEOUT)
        t = kiln.ones(2) * (rank + 1)
        dist.all_reduce(t)
        seen.append((method.split(":")[0], dist.get_rank(), dist.get_world_size(), t.tolist()))
        dist.barrier()
        dist.destroy_process_group()
    store = dist.TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), world, rank == 0, timeout=TIMEOUT)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=TIMEOUT)
    t = kiln.ones(1) * rank
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    store.set(f"key{rank}", f"value{rank}")
    store.wait([f"key{r}" for r in range(world)])
    seen.append(("store", store.get(f"key{(rank + 1) % world}").decode(), store.add("counter", 1) > 0, t.tolist()))
    dist.barrier()
    dist.destroy_process_group()
    return seen


def rank_dies(rank: int, world: int) -> str:
    """The last rank exits mid-job; the others' next collective must fail, not hang."""
    dist.init_process_group("gloo", timeout=timedelta(seconds=5))
    dist.barrier()
    if rank == world - 1:
        os._exit(3)
    try:
        dist.all_reduce(kiln.ones(4))
        dist.all_reduce(kiln.ones(4))
    except RuntimeError as e:
        return str(e)
    return "no error"


def rank_hangs(rank: int, world: int) -> str:
    """The last rank never joins the collective; the others' must fail within the timeout."""
    dist.init_process_group("gloo", timeout=timedelta(seconds=1))
    if rank == world - 1:
        import time
        time.sleep(3)
        return "slept"
    try:
        dist.all_reduce(kiln.ones(4))
    except RuntimeError as e:
        return str(e)
    return "no error"


# --- DistributedDataParallel ---------------------------------------------------------------------

BATCH, FEATURES, HIDDEN, OUTPUTS, LR, MOMENTUM = 12, 8, 16, 4, 0.1, 0.9


def mlp(nn):
    """The seed MLP, in kiln.nn or torch.nn (the tests build the same one in torch)."""
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUTPUTS))


def gpt_block(nn):
    """A GPT-style block (LayerNorm, causal self-attention, GELU MLP) and a head, in kiln.nn or torch.nn:
    2 tokens of 4 channels per sample in, 2 tokens of 2 values out (the MLP's batch, reshaped)."""
    F = nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(4), nn.LayerNorm(4)
            self.c_attn, self.c_proj = nn.Linear(4, 12), nn.Linear(4, 4)
            self.mlp = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 4))
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
            x = x + self.c_proj(y)
            return self.head(x + self.mlp(self.ln_2(x)))

    return Block()


def model_and_batch_shapes(nn, kind: str):
    """(model, x's per-sample shape, y's per-sample shape) for "mlp" or "gpt"."""
    if kind == "gpt":
        return gpt_block(nn), (2, 4), (2, 2)
    return mlp(nn), (FEATURES,), (OUTPUTS,)


def full_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.standard_normal((BATCH, FEATURES)), rng.standard_normal((BATCH, OUTPUTS))


def _parameters(model) -> list:
    return [p.detach().to(kiln.float64).tolist() for p in model.parameters()]


def ddp_jobs(rank: int, world: int, steps: int, variants: dict) -> dict:
    """One job for every DDP test: ``{variant: ddp_train's result}`` and "unused": ddp_unused_parameters'."""
    dist.init_process_group("gloo", timeout=TIMEOUT)
    results = {name: ddp_train(rank, world, steps, dict(options)) for name, options in variants.items()}
    results["unused"] = ddp_unused_parameters(rank, world)
    dist.destroy_process_group()
    return results


def ddp_train(rank: int, world: int, steps: int, options: dict) -> dict:
    """A few SGD steps of a model under DDP, each rank on its shard of the full batch.

    Ranks start from different weights (seed 100 + rank): DDP's construction must broadcast rank 0's.
    ``options``: DDP keyword arguments, plus "model" ("mlp" or "gpt"), "micro_batches" (accumulated under
    no_sync but the last), "compile" (where kiln.compile wraps: "inside" or "outside" DDP) and "zero"
    (ZeroRedundancyOptimizer over SGD with momentum)."""
    from kiln.nn.parallel import DistributedDataParallel
    kiln.manual_seed(100 + rank)
    model, x_shape, y_shape = model_and_batch_shapes(kiln.nn, options.pop("model", "mlp"))
    model = model.double()
    micro_batches = options.pop("micro_batches", 1)
    zero = options.pop("zero", False)
    compiled = options.pop("compile", None)  # "inside": DDP(compile(model)); "outside": compile(DDP(model))
    hook = options.pop("hook", None)  # a default hook's name, or "counting" (counting_hook)
    compiled_model = kiln.compile(model) if compiled == "inside" else None
    ddp = DistributedDataParallel(compiled_model if compiled == "inside" else model, **options)
    hook_calls = []
    if hook == "counting":
        ddp.register_comm_hook(hook_calls, counting_hook)
    elif hook is not None:  # "name" or "wrapper(name)"
        from kiln.distributed.algorithms.ddp_comm_hooks import default_hooks
        wrapper, _, inner = hook.rstrip(")").rpartition("(")
        fn = getattr(default_hooks, inner)
        ddp.register_comm_hook(None, getattr(default_hooks, wrapper)(fn) if wrapper else fn)
    keys = list(ddp.state_dict().keys())
    if compiled == "outside":
        ddp = kiln.compile(ddp)
        compiled_model = ddp
    initial = _parameters(model)
    if zero:  # optimizer state sharded across the ranks
        from kiln.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(ddp.parameters(), kiln.optim.SGD, lr=LR, momentum=MOMENTUM)
    else:
        optimizer = kiln.optim.SGD(ddp.parameters(), lr=LR)
    x, y = full_batch()
    per_rank = BATCH // world
    xs = kiln.tensor(x[rank * per_rank:(rank + 1) * per_rank].tolist(), dtype=kiln.float64).reshape(-1, *x_shape)
    ys = kiln.tensor(y[rank * per_rank:(rank + 1) * per_rank].tolist(), dtype=kiln.float64).reshape(-1, *y_shape)
    per_micro = per_rank // micro_batches
    for _ in range(steps):
        optimizer.zero_grad()
        for m in range(micro_batches):
            part = slice(m * per_micro, (m + 1) * per_micro)
            def backward(part=part):
                loss = kiln.nn.functional.mse_loss(ddp(xs[part]), ys[part])
                loss.backward()
            if m < micro_batches - 1:
                with model_of(ddp).no_sync():
                    backward()
            else:
                backward()
        optimizer.step()
    shard = sum(len(g["params"]) for g in optimizer.optim.param_groups) if zero else None
    # Fused kernels per captured entry (None: replayed by the interpreter): the compiled model really ran
    # compiled, with DDP's all-reduces outside its graphs.
    from kiln.compiler._backends import kernel_counts
    kernels = kernel_counts(compiled_model) if compiled_model is not None else None
    return {"initial": initial, "final": _parameters(model), "keys": keys, "shard": shard, "kernels": kernels,
            "hook_calls": hook_calls, "buckets": len(model_of(ddp)._buckets)}


def counting_hook(calls: list, bucket):
    """A custom comm hook: records what it was given, all-reduces synchronously and averages, and returns a
    Future it completed itself."""
    params = bucket.parameters()
    shapes_match = [tuple(g.shape) for g in bucket.gradients()] == [tuple(p.shape) for p in params]
    calls.append([bucket.index(), bucket.is_last(), len(params), shapes_match,
                  bucket.buffer().numel() == sum(p.numel() for p in params)])
    buffer = bucket.buffer()
    dist.all_reduce(buffer)
    buffer.div_(dist.get_world_size())
    future = kiln.futures.Future()
    future.set_result(buffer)
    return future


def model_of(wrapped):
    """The DDP inside kiln.compile's wrapper, or ``wrapped`` itself."""
    return getattr(wrapped, "_orig_mod", wrapped)


def ddp_unused_parameters(rank: int, world: int) -> dict:
    """A parameter only rank 0 uses (find_unused_parameters=True), then one nobody uses without it."""
    from kiln.nn.parallel import DistributedDataParallel

    class TwoHeads(kiln.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = kiln.nn.Linear(3, 3)
            self.head = kiln.nn.Linear(3, 1)
            self.extra = kiln.nn.Linear(3, 1)

        def forward(self, x, use_extra: bool):
            h = self.body(x)
            return self.head(h) + (self.extra(h) if use_extra else 0)

    kiln.manual_seed(0)
    ddp = DistributedDataParallel(TwoHeads(), find_unused_parameters=True, bucket_cap_mb=1e-5)
    ddp(kiln.ones(2, 3), use_extra=rank == 0).sum().backward()
    grads = {name: None if p.grad is None else p.grad.tolist() for name, p in ddp.module.named_parameters()}
    strict = DistributedDataParallel(TwoHeads())
    strict(kiln.ones(2, 3), use_extra=False).sum().backward()
    try:
        strict(kiln.ones(2, 3), use_extra=False)
        error = "no error"
    except RuntimeError as e:
        error = str(e)
    return {"grads": grads, "error": error}


# --- all_to_all with uneven splits ---------------------------------------------------------------

A2A_DTYPES = ("float32", "float64", "bfloat16", "int64", "uint8")


def a2a_split_matrices(world: int) -> list:
    """(name, rows[i][j]: rows rank i sends rank j) cases every rank draws alike: random counts with
    zeros, one rank that sends and receives nothing, everything empty, and equal chunks."""
    rng = np.random.default_rng(1000 + world)
    cases = [("random", rng.integers(0, 4, size=(world, world)).tolist())]
    silent = rng.integers(1, 3, size=(world, world))
    silent[world - 1, :] = 0
    silent[:, world - 1] = 0
    cases.append(("a silent rank", silent.tolist()))
    cases.append(("all empty", [[0] * world for _ in range(world)]))
    cases.append(("equal", [[2] * world for _ in range(world)]))
    return cases


def _a2a_block(sender: int, receiver: int, rows: int, row_shape: tuple) -> np.ndarray:
    """What rank ``sender`` sends ``receiver``: small integers, exact in every dtype."""
    n = rows * int(np.prod(row_shape, dtype=np.int64))
    return ((np.arange(n) + 7 * sender + 3 * receiver) % 11).astype(np.float64).reshape((rows,) + row_shape)


def all_to_all_uneven(rank: int, world: int) -> list:
    """all_to_all_single with input/output split sizes, and all_to_all of tensor lists, against numpy:
    the failures found (empty when all agree)."""
    dist.init_process_group("gloo", timeout=TIMEOUT)
    failures = []

    def check(what, got, expected):
        got = np.asarray(got.detach().to(kiln.float64).tolist(), dtype=np.float64).reshape(tuple(got.shape))
        if got.shape != expected.shape or not np.array_equal(got, expected):
            failures.append(f"{what}: got {got.reshape(-1).tolist()[:12]} {got.shape}, "
                            f"expected {expected.reshape(-1).tolist()[:12]} {expected.shape}")

    for name, rows in a2a_split_matrices(world):
        sends = [rows[rank][j] for j in range(world)]
        receives = [rows[i][rank] for i in range(world)]
        for dtype in A2A_DTYPES:
            kdtype = getattr(kiln, dtype)
            for row_shape in ((), (3,), (2, 2)):
                what = f"{name} {dtype} rows of {row_shape}"
                source = np.concatenate([_a2a_block(rank, j, sends[j], row_shape) for j in range(world)])
                expected = np.concatenate([_a2a_block(i, rank, receives[i], row_shape) for i in range(world)])
                try:
                    inp = kiln.tensor(source.tolist(), dtype=kdtype).reshape(source.shape)
                    out = kiln.full(expected.shape, -1, dtype=kdtype)
                    dist.all_to_all_single(out, inp, output_split_sizes=receives, input_split_sizes=sends)
                    check(what, out, expected)
                    if row_shape == (2, 2):  # non-contiguous input and output (same values)
                        inp_nc = inp.transpose(1, 2).contiguous().transpose(1, 2)
                        out_nc = kiln.zeros(expected.shape[0], 2, 2, dtype=kdtype).transpose(1, 2)
                        work = dist.all_to_all_single(out_nc, inp_nc, receives, sends, async_op=True)
                        work.wait()
                        check(f"{what} non-contiguous, async", out_nc.transpose(1, 2), expected.transpose(0, 2, 1))
                    if row_shape == (3,):  # the list form: one tensor per peer, any shapes
                        ins = [kiln.tensor(_a2a_block(rank, j, sends[j], row_shape).tolist(), dtype=kdtype)
                               .reshape(sends[j], 3) for j in range(world)]
                        outs = [kiln.full((receives[i], 3), -1, dtype=kdtype) for i in range(world)]
                        dist.all_to_all(outs, ins)
                        for i in range(world):
                            check(f"{what} all_to_all from rank {i}", outs[i],
                                  _a2a_block(i, rank, receives[i], row_shape))
                except Exception as e:  # noqa: BLE001  (recorded: the test names it)
                    failures.append(f"{what}: raised {type(e).__name__}: {e}")
    try:
        dist.all_to_all_single(kiln.zeros(world), kiln.zeros(world), [1] * world, [2] + [1] * (world - 1))
        failures.append("mismatched input split sizes did not raise")
    except ValueError as e:
        if "don't match total dim 0 size" not in str(e):
            failures.append(f"wrong error for mismatched split sizes: {e}")
    dist.barrier()
    dist.destroy_process_group()
    return failures
