"""backend="nccl" run end to end without a GPU, on stand-ins: a libcuda.so.1 whose "device memory"
is host memory (copies are memcpy, streams and events complete at once, or never when
FAKE_CUDA_HANG is set) and a libnccl.so.2 for one rank that logs every call and moves the bytes a
one-rank NCCL would. This proves what a GPU run would otherwise be the first to exercise: the
unique id through the store, the communicator, every collective's NCCL call with its datatype,
count and op (bool as uint8 MAX/MIN, AVG as ncclAvg), grouped
send/recv for gather/scatter/all_to_all, the Work handles, and the bounded wait that aborts the
communicator when NCCL never finishes. Kernels are not emulated: only copies and NCCL calls run.
The stand-ins are helpers/emulated_nccl.py's; test_nccl_emulated_ranks.py runs 2 ranks (complex
tensors as pairs of reals, DistributedDataParallel). The real collectives on a GPU are
test_nccl_device.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from emulated_nccl import build


FAKE_NCCL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct { char internal[128]; } ncclUniqueId;
static const size_t kSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
static void note(const char* fmt, size_t a, int b, int c) {
  FILE* f = fopen(getenv("FAKE_NCCL_LOG"), "a");
  fprintf(f, fmt, a, b, c);
  fputc('\n', f);
  fclose(f);
}
static const void* pending_send;  /* one rank: a send is to itself, matched by the next recv */
int ncclGetVersion(int* v) { *v = 22105; return 0; }
const char* ncclGetErrorString(int r) { return "emulated NCCL error"; }
int ncclGetUniqueId(ncclUniqueId* id) { memset(id, 0, sizeof *id); strcpy(id->internal, "emulated"); return 0; }
int ncclCommInitRank(void** comm, int n, ncclUniqueId id, int rank) {
  if (n != 1 || strcmp(id.internal, "emulated") != 0) return 4;
  *comm = malloc(1);
  note("init %zu %d %d", (size_t)n, rank, 0);
  return 0;
}
int ncclCommDestroy(void* c) { return 0; }
int ncclCommAbort(void* c) { note("abort %zu %d %d", 0, 0, 0); return 0; }
int ncclCommGetAsyncError(void* c, int* r) { *r = 0; return 0; }
int ncclAllReduce(const void* s, void* r, size_t n, int t, int op, void* c, void* st) {
  note("all_reduce %zu %d %d", n, t, op); memmove(r, s, n * kSize[t]); return 0;
}
int ncclReduce(const void* s, void* r, size_t n, int t, int op, int root, void* c, void* st) {
  note("reduce %zu %d %d", n, t, op); memmove(r, s, n * kSize[t]); return 0;
}
int ncclBroadcast(const void* s, void* r, size_t n, int t, int root, void* c, void* st) {
  note("broadcast %zu %d %d", n, t, root); memmove(r, s, n * kSize[t]); return 0;
}
int ncclAllGather(const void* s, void* r, size_t n, int t, void* c, void* st) {
  note("all_gather %zu %d %d", n, t, 0); memmove(r, s, n * kSize[t]); return 0;
}
int ncclReduceScatter(const void* s, void* r, size_t n, int t, int op, void* c, void* st) {
  note("reduce_scatter %zu %d %d", n, t, op); memmove(r, s, n * kSize[t]); return 0;
}
int ncclSend(const void* s, size_t n, int t, int peer, void* c, void* st) {
  note("send %zu %d %d", n, t, peer); pending_send = s; return 0;
}
int ncclRecv(void* r, size_t n, int t, int peer, void* c, void* st) {
  note("recv %zu %d %d", n, t, peer); memmove(r, pending_send, n * kSize[t]); return 0;
}
int ncclGroupStart(void) { note("group_start %zu %d %d", 0, 0, 0); return 0; }
int ncclGroupEnd(void) { note("group_end %zu %d %d", 0, 0, 0); return 0; }
"""

SCRIPT = r"""
import json, os, sys
from datetime import timedelta
import numpy as np
import kiln
import kiln.distributed as dist

out = {"gpus": kiln.cuda.device_count(), "nccl": dist.is_nccl_available()}
dist.init_process_group("nccl", init_method="file://" + sys.argv[1], rank=0, world_size=1,
                        timeout=timedelta(seconds=1), device_id=kiln.device("cuda:0"))
out["backend"] = dist.get_backend()
cuda = lambda a: kiln.from_numpy(np.asarray(a)).to("cuda:0")
host = lambda t: t.cpu().numpy().tolist()
t = cuda(np.arange(6, dtype=np.float32))
dist.all_reduce(t, op=dist.ReduceOp.AVG)
out["all_reduce"] = host(t)
dist.all_reduce(cuda(np.array([True, False])), op=dist.ReduceOp.SUM)
dist.all_reduce(cuda(np.array([True, False])), op=dist.ReduceOp.PRODUCT)
dist.all_reduce(cuda(np.zeros(0, dtype=np.float64)))  # no NCCL call
work = dist.broadcast(cuda(np.arange(3, dtype=np.int64)), src=0, async_op=True)
work.wait()
out["completed"] = work.is_completed()
outs = [cuda(np.zeros(4, dtype=np.float64))]
dist.all_gather(outs, cuda(np.arange(4, dtype=np.float64)))
out["all_gather"] = host(outs[0])
gathered = [cuda(np.zeros(2, dtype=np.int32))]
dist.gather(cuda(np.array([7, 8], dtype=np.int32)), gathered, dst=0)
out["gather"] = host(gathered[0])
piece = cuda(np.zeros(2, dtype=np.float16))
dist.scatter(piece, [cuda(np.array([1.5, 2.5], dtype=np.float16))], src=0)
out["scatter"] = host(piece)
a2a = cuda(np.zeros(3, dtype=np.uint8))
dist.all_to_all_single(a2a, cuda(np.array([4, 5, 6], dtype=np.uint8)))
out["all_to_all"] = host(a2a)
red = cuda(np.array([3, 1], dtype=np.int8))
dist.reduce(red, dst=0, op=dist.ReduceOp.MIN)
dist.reduce_scatter_tensor(cuda(np.zeros(2, dtype=np.float32)), cuda(np.ones(2, dtype=np.float32)))
dist.barrier()
errors = {}
for name, call in {
    "int16": lambda: dist.all_reduce(cuda(np.ones(2, dtype=np.int16))),
    "avg_int": lambda: dist.all_reduce(cuda(np.ones(2, dtype=np.int64)), op=dist.ReduceOp.AVG),
    "cpu": lambda: dist.all_reduce(kiln.ones(2)),
    "any_source": lambda: dist.recv(cuda(np.zeros(2, dtype=np.float32))),
}.items():
    try:
        call()
        errors[name] = None
    except Exception as e:
        errors[name] = [type(e).__name__, str(e)]
os.environ["FAKE_CUDA_HANG"] = "1"  # NCCL never finishes: wait() must give up after the timeout
for name in ("timeout", "after_abort"):
    try:
        dist.all_reduce(cuda(np.ones(2, dtype=np.float32)))
        errors[name] = None
    except Exception as e:
        errors[name] = [type(e).__name__, str(e)]
del os.environ["FAKE_CUDA_HANG"]
out["errors"] = errors
print(json.dumps(out))
"""

# nccl.h's values: ncclUint8 1, ncclInt32 2, ncclInt64 4, ncclFloat16 6, ncclFloat32 7, ncclFloat64 8;
# ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4.
EXPECTED_CALLS = [
    "init 1 0 0",
    "all_reduce 6 7 4",  # float32 AVG
    "all_reduce 2 1 2",  # bool SUM: uint8 MAX
    "all_reduce 2 1 3",  # bool PRODUCT: uint8 MIN
    "broadcast 3 4 0",
    "all_gather 4 8 0",
    "group_start 0 0 0", "send 2 2 0", "recv 2 2 0", "group_end 0 0 0",  # gather to rank 0
    "group_start 0 0 0", "send 2 6 0", "recv 2 6 0", "group_end 0 0 0",  # scatter from rank 0
    "group_start 0 0 0", "send 3 1 0", "recv 3 1 0", "group_end 0 0 0",  # all_to_all_single
    "reduce 2 0 3",  # int8 MIN
    "reduce_scatter 2 7 0",
    "all_reduce 1 7 0",  # barrier: one float32 summed
    "all_reduce 2 7 0",  # the call that never finishes
    "abort 0 0 0",
]


def test_nccl_group_runs_every_collective_on_emulated_cuda_and_nccl(tmp_path):
    log = tmp_path / "nccl_calls.log"
    env = dict(os.environ, **build(tmp_path, FAKE_NCCL), FAKE_NCCL_LOG=str(log))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "init")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["gpus"] == 1 and out["nccl"] is True and out["backend"] == "nccl"
    assert out["all_reduce"] == [0, 1, 2, 3, 4, 5] and out["completed"] is True
    assert out["all_gather"] == [0, 1, 2, 3] and out["gather"] == [7, 8]
    assert out["scatter"] == [1.5, 2.5] and out["all_to_all"] == [4, 5, 6]
    errors = out["errors"]
    assert errors["int16"][0] == "RuntimeError" and "not supported for the NCCL process group: int16" in errors["int16"][1]
    assert errors["avg_int"][0] == "RuntimeError" and "AVG is only supported for floating-point" in errors["avg_int"][1]
    assert errors["cpu"][0] == "RuntimeError" and "NCCL backend takes CUDA tensors" in errors["cpu"][1]
    assert errors["any_source"][0] == "ValueError" and "cannot receive from any source" in errors["any_source"][1]
    kind, message = errors["timeout"]
    assert kind == "RuntimeError" and "all_reduce timed out after 1000 ms" in message and "aborted" in message
    kind, message = errors["after_abort"]
    assert kind == "RuntimeError" and "the NCCL communicator was aborted" in message
    assert log.read_text().splitlines() == EXPECTED_CALLS
