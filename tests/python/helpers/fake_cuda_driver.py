"""A stand-in libcuda.so.1 whose "device" is host memory, for the tests that drive kiln's CUDA paths
without a GPU: copies are memcpy, streams and events complete at once (or never while FAKE_CUDA_HANG is
set), one device of compute capability 9.0. Compiled by ``build_fake_cuda(folder, *defines)``:
KERNELS_LOAD makes modules load and launches succeed without running anything (the NVRTC-compiled
kernels are only logged), else they fail with CUDA_ERROR_UNKNOWN; WITH_GRAPHS (with KERNELS_LOAD) adds
the stream-capture and CUDA-graph entry points. When FAKE_CUDA_LOG names a file, allocations, stream
creations, launches, captures and graph launches each append a line to it. Used by
helpers/emulated_nccl.py (the NCCL tests) and tests/python/compiler/test_cuda_reduce_overhead.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["FAKE_CUDA", "build_fake_cuda"]

FAKE_CUDA = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long long ptr_t;
static void note(const char* what) {  /* one line per call of interest, when FAKE_CUDA_LOG names a file */
  const char* log = getenv("FAKE_CUDA_LOG");
  if (log == NULL) return;
  FILE* f = fopen(log, "a");
  fprintf(f, "%s\n", what);
  fclose(f);
}
static void* device_alloc(size_t n) { return aligned_alloc(256, (n + 255) / 256 * 256 + 256); }
int cuInit(unsigned f) { return 0; }
int cuDriverGetVersion(int* v) { *v = 13000; return 0; }
int cuGetErrorName(int e, const char** s) { *s = "CUDA_ERROR_FAKE"; return 0; }
int cuGetErrorString(int e, const char** s) { *s = "fake driver"; return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuDeviceGet(int* d, int i) { *d = i; return 0; }
int cuDeviceGetName(char* s, int n, int d) { strncpy(s, "Emulated GPU", n); return 0; }
int cuDeviceGetAttribute(int* v, int a, int d) {
  switch (a) {
    case 75: *v = 9; break;    /* compute capability 9.0: NVRTC compiles for sm_90 */
    case 76: *v = 0; break;
    case 1: *v = 1024; break;
    case 10: *v = 32; break;
    case 16: *v = 132; break;
    case 39: *v = 2048; break;
    default: *v = 49152; break;
  }
  return 0;
}
int cuDeviceTotalMem_v2(size_t* b, int d) { *b = (size_t)1 << 30; return 0; }
int cuDevicePrimaryCtxRetain(void** c, int d) { *c = (void*)0x1; return 0; }
int cuCtxSetCurrent(void* c) { return 0; }
int cuCtxGetCurrent(void** c) { *c = (void*)0x1; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuMemAlloc_v2(ptr_t* p, size_t n) { note("mem_alloc"); *p = (ptr_t)device_alloc(n); return 0; }
int cuMemFree_v2(ptr_t p) { free((void*)p); return 0; }
int cuMemGetInfo_v2(size_t* f, size_t* t) { *f = *t = (size_t)1 << 30; return 0; }
int cuMemHostAlloc(void** p, size_t n, unsigned f) { *p = device_alloc(n); return 0; }
int cuMemFreeHost(void* p) { free(p); return 0; }
int cuMemcpyHtoDAsync_v2(ptr_t d, const void* s, size_t n, void* st) { memcpy((void*)d, s, n); return 0; }
int cuMemcpyDtoHAsync_v2(void* d, ptr_t s, size_t n, void* st) { memcpy(d, (void*)s, n); return 0; }
int cuMemcpyDtoDAsync_v2(ptr_t d, ptr_t s, size_t n, void* st) { memmove((void*)d, (void*)s, n); return 0; }
int cuMemcpyPeerAsync(ptr_t d, void* dc, ptr_t s, void* sc, size_t n, void* st) { memmove((void*)d, (void*)s, n); return 0; }
int cuMemsetD8Async(ptr_t d, unsigned char v, size_t n, void* st) { memset((void*)d, v, n); return 0; }
int cuStreamCreateWithPriority(void** s, unsigned f, int p) { note("stream_create"); *s = malloc(1); return 0; }
int cuStreamDestroy_v2(void* s) { return 0; }
int cuStreamSynchronize(void* s) { return 0; }
int cuStreamQuery(void* s) { return 0; }
int cuStreamWaitEvent(void* s, void* e, unsigned f) { return 0; }
int cuEventCreate(void** e, unsigned f) { *e = malloc(1); return 0; }
int cuEventDestroy_v2(void* e) { return 0; }
int cuEventRecord(void* e, void* s) { return 0; }
int cuEventSynchronize(void* e) { return 0; }
int cuEventQuery(void* e) { return getenv("FAKE_CUDA_HANG") ? 600 : 0; }  /* 600: CUDA_ERROR_NOT_READY */
int cuEventElapsedTime(float* ms, void* a, void* b) { *ms = 0; return 0; }
int cuModuleUnload(void* m) { return 0; }
#ifdef KERNELS_LOAD  /* a module loads and a launch is logged (nothing runs) */
int cuModuleLoadData(void** m, const void* i) { *m = malloc(1); return 0; }
int cuModuleGetFunction(void** f, void* m, const char* n) { *f = malloc(1); return 0; }
static void* capturing;
int cuLaunchKernel(void* f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned h,
                   void* s, void** p, void** x) {
  note(s == NULL ? "launch default_stream" : s == capturing ? "launch captured" : "launch side_stream");
  return 0;
}
#else  /* kernels cannot be launched: 999 is CUDA_ERROR_UNKNOWN */
int cuModuleLoadData(void** m, const void* i) { return 999; }
int cuModuleGetFunction(void** f, void* m, const char* n) { return 999; }
int cuLaunchKernel(void* f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned h,
                   void* s, void** p, void** x) { return 999; }
#endif
#if defined(WITH_GRAPHS) && defined(KERNELS_LOAD)  /* stream capture and graph launches, logged */
int cuStreamBeginCapture_v2(void* s, int mode) {
  if (s == NULL || mode != 1) return 1;
  capturing = s;
  note("begin_capture");
  return 0;
}
int cuStreamEndCapture(void* s, void** graph) {
  capturing = NULL;
  note("end_capture");
  if (getenv("FAKE_CUDA_REFUSE_CAPTURE")) { *graph = NULL; return 901; }  /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  *graph = malloc(1);
  return 0;
}
int cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  note("instantiate"); *exec = malloc(1); return 0;
}
int cuGraphLaunch(void* exec, void* s) { note(s == NULL ? "graph_launch default_stream" : "graph_launch"); return 0; }
int cuGraphExecDestroy(void* exec) { return 0; }
int cuGraphDestroy(void* graph) { return 0; }
#endif
"""


def build_fake_cuda(folder: Path, *defines: str) -> Path:
    """Compiles FAKE_CUDA with each of ``defines`` (KERNELS_LOAD, WITH_GRAPHS) as ``folder/libcuda.so.1``."""
    (folder / "libcuda.so.1.c").write_text(FAKE_CUDA)
    library = folder / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", *(f"-D{d}" for d in defines), "-o", str(library),
                    str(folder / "libcuda.so.1.c")], check=True, timeout=60)
    return library
