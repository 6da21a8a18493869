"""Stand-ins for a GPU and NCCL, so backend="nccl" runs on a machine without either: a libcuda.so.1
whose "device memory" is host memory (helpers/fake_cuda_driver.py's; kernels cannot be launched), and
libnccl.so.2s for one or more ranks. ``build(tmp_path, nccl_source)`` compiles them and returns the environment that makes kiln
load them. Used by tests/python/distributed/test_nccl_emulated.py (one rank, every call logged)
and test_nccl_emulated_ranks.py (2 processes whose collectives meet through files).

Note [NCCL across emulated ranks]
---------------------------------
RANKS_NCCL is NCCL for n processes on one machine: each collective is the call's ordinal number
on its communicator; a rank writes its send buffer to ``<FAKE_NCCL_DIR>/<ordinal>.<rank>``
(renamed into place, so a reader never sees half of it), waits for the files the collective
needs (every rank's, or the root's), and computes its receive buffer from them on the host.
Calls are synchronous, as the stand-in CUDA's streams are. Sums, products, minima, maxima and
averages of float32/float64/int32/int64/uint8 (bool travels as uint8), all_reduce, broadcast,
all_gather and reduce_scatter: what DistributedDataParallel and the complex-as-real-pairs
collectives need. Waits give up after 60 s (the test's own timeout then names the rank).
"""

from __future__ import annotations

import subprocess

from fake_cuda_driver import build_fake_cuda

__all__ = ["RANKS_NCCL", "build"]

RANKS_NCCL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int n, rank; long calls; } Comm;
static const size_t kSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
int ncclGetVersion(int* v) { *v = 22105; return 0; }
const char* ncclGetErrorString(int r) { return "emulated NCCL error"; }
int ncclGetUniqueId(ncclUniqueId* id) { memset(id, 0, sizeof *id); strcpy(id->internal, "ranks"); return 0; }
int ncclCommInitRank(void** comm, int n, ncclUniqueId id, int rank) {
  if (strcmp(id.internal, "ranks") != 0) return 4;
  Comm* c = calloc(1, sizeof(Comm));
  c->n = n; c->rank = rank;
  *comm = c;
  return 0;
}
int ncclCommDestroy(void* c) { free(c); return 0; }
int ncclCommAbort(void* c) { return 0; }
int ncclCommGetAsyncError(void* c, int* r) { *r = 0; return 0; }
static void path_of(char* out, long call, int rank) {
  snprintf(out, 4096, "%s/%ld.%d", getenv("FAKE_NCCL_DIR"), call, rank);
}
static void publish(Comm* c, const void* data, size_t bytes) {
  char path[4096], tmp[4200];
  path_of(path, c->calls, c->rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  fwrite(data, 1, bytes, f);
  fclose(f);
  rename(tmp, path);
}
static int fetch(Comm* c, int rank, void* data, size_t bytes) {
  char path[4096];
  path_of(path, c->calls, rank);
  for (int tries = 0; tries < 600000; ++tries) {
    FILE* f = fopen(path, "rb");
    if (f) {
      size_t got = fread(data, 1, bytes, f);
      fclose(f);
      return got == bytes ? 0 : 5;
    }
    usleep(100);
  }
  return 6;
}
#define COMBINE(T)                                                                  \
  {                                                                                 \
    T* a = (T*)acc; const T* b = (const T*)in;                                      \
    for (size_t i = 0; i < n; ++i) {                                                \
      if (op == 0 || op == 4) a[i] += b[i];                                         \
      else if (op == 1) a[i] *= b[i];                                               \
      else if (op == 2) a[i] = a[i] > b[i] ? a[i] : b[i];                           \
      else a[i] = a[i] < b[i] ? a[i] : b[i];                                        \
    }                                                                               \
    if (last && op == 4) for (size_t i = 0; i < n; ++i) a[i] /= (T)ranks;           \
    return 0;                                                                       \
  }
static int combine(void* acc, const void* in, size_t n, int t, int op, int last, int ranks) {
  switch (t) {
    case 1: COMBINE(unsigned char)
    case 2: COMBINE(int)
    case 4: COMBINE(long long)
    case 7: COMBINE(float)
    case 8: COMBINE(double)
  }
  return 5;
}
/* The reduction of every rank's `count` elements into `out`. */
static int reduce_all(Comm* c, const void* s, void* out, size_t count, int t, int op) {
  size_t bytes = count * kSize[t];
  publish(c, s, bytes);
  void* in = malloc(bytes ? bytes : 1);
  int rv = 0;
  for (int r = 0; r < c->n && rv == 0; ++r) {
    rv = fetch(c, r, r == 0 ? out : in, bytes);
    if (rv == 0 && r > 0) rv = combine(out, in, count, t, op, r == c->n - 1, c->n);
  }
  free(in);
  c->calls++;
  return rv;
}
int ncclAllReduce(const void* s, void* r, size_t n, int t, int op, void* c, void* st) {
  return reduce_all((Comm*)c, s, r, n, t, op);
}
int ncclBroadcast(const void* s, void* r, size_t n, int t, int root, void* comm, void* st) {
  Comm* c = comm;
  if (c->rank == root) publish(c, s, n * kSize[t]);
  int rv = fetch(c, root, r, n * kSize[t]);
  c->calls++;
  return rv;
}
int ncclAllGather(const void* s, void* r, size_t n, int t, void* comm, void* st) {
  Comm* c = comm;
  publish(c, s, n * kSize[t]);
  int rv = 0;
  for (int q = 0; q < c->n && rv == 0; ++q) rv = fetch(c, q, (char*)r + q * n * kSize[t], n * kSize[t]);
  c->calls++;
  return rv;
}
int ncclReduceScatter(const void* s, void* r, size_t n, int t, int op, void* comm, void* st) {
  Comm* c = comm;
  void* all = malloc(n * c->n * kSize[t] + 1);
  int rv = reduce_all(c, s, all, n * c->n, t, op);
  memcpy(r, (char*)all + c->rank * n * kSize[t], n * kSize[t]);
  free(all);
  return rv;
}
int ncclReduce(const void* s, void* r, size_t n, int t, int op, int root, void* c, void* st) { return 5; }
int ncclSend(const void* s, size_t n, int t, int peer, void* c, void* st) { return 5; }
int ncclRecv(void* r, size_t n, int t, int peer, void* c, void* st) { return 5; }
int ncclGroupStart(void) { return 0; }
int ncclGroupEnd(void) { return 0; }
"""


def build(tmp_path, nccl_source: str) -> dict:
    """Compiles the stand-in libcuda.so.1 and ``nccl_source`` as libnccl.so.2 in ``tmp_path``; the
    environment variables that make kiln load them."""
    driver = build_fake_cuda(tmp_path)
    (tmp_path / "libnccl.so.2.c").write_text(nccl_source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libnccl.so.2"), str(tmp_path / "libnccl.so.2.c")],
                   check=True, timeout=60)
    return {"KILN_CUDA_DRIVER_LIBRARY": str(driver), "KILN_NCCL_LIBRARY": str(tmp_path / "libnccl.so.2")}
