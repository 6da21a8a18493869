// The CUDA driver API (libcuda.so.1), loaded with dlopen at first use.
//
// kiln declares the few driver types and entry points it calls itself rather
// than including cuda.h, so it builds on a machine without the CUDA toolkit;
// the values below are cuda.h's (CUDA 13.0), and the entry points are the
// versioned symbols cuda.h's macros name (cuMemAlloc is cuMemAlloc_v2, ...).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorNotReady = 600;

enum DeviceAttribute : int {
  kAttrMaxThreadsPerBlock = 1,
  kAttrMaxSharedMemoryPerBlock = 8,
  kAttrWarpSize = 10,
  kAttrMultiprocessorCount = 16,
  kAttrIntegrated = 18,
  kAttrL2CacheSize = 38,
  kAttrMaxThreadsPerMultiprocessor = 39,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrMultiGpuBoard = 84,
};
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0x0;
inline constexpr unsigned kEventDisableTiming = 0x2;
inline constexpr unsigned kMemHostAllocPortable = 0x1;
inline constexpr int kStreamCaptureModeThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

/// The driver entry points kiln uses, resolved once.
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult error, const char** str);
  CUresult (*cuGetErrorString)(CUresult error, const char** str);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int* pi, int attrib, CUdevice dev);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* pctx, CUdevice dev);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxGetCurrent)(CUcontext* pctx);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr* dptr, size_t bytesize);
  CUresult (*cuMemFree)(CUdeviceptr dptr);
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);
  CUresult (*cuMemHostAlloc)(void** pp, size_t bytesize, unsigned flags);
  CUresult (*cuMemFreeHost)(void* p);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                                CUstream stream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
  CUresult (*cuStreamCreateWithPriority)(CUstream* stream, unsigned flags, int priority);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamQuery)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_bytes, CUstream stream, void** params, void** extra);
  // Stream capture and CUDA graphs (eager/cuda/CudaGraph.h): optional, nullptr when the driver lacks them.
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
};

/// The driver, loaded and initialised (cuInit) on first call. Throws the
/// no-driver RuntimeError (no_driver_message()) when libcuda.so.1 cannot be
/// loaded, and a RuntimeError naming cuInit's error when it fails.
[[nodiscard]] const DriverApi& driver();

/// True when the driver loads, initialises and reports at least one device.
/// Never throws; the first call tries once and remembers the answer.
[[nodiscard]] bool driver_available();

/// Why CUDA is unavailable ("" when it is available): the no-driver message,
/// or cuInit's / cuDeviceGetCount's error.
[[nodiscard]] const char* unavailable_reason();

/// kiln's wording of torch's "Found no NVIDIA driver on your system..."
[[nodiscard]] const char* no_driver_message();

/// Throws RuntimeError "CUDA error: <name> (<description>) in <what>" unless
/// `result` is success; an out-of-memory result raises OutOfMemory.
void check(CUresult result, const char* what);

}  // namespace kiln::cuda
