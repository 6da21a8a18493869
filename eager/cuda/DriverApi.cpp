// Loads libcuda.so.1 and resolves the driver entry points kiln uses.
#include "eager/cuda/DriverApi.h"

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/cuda/DynamicLibrary.h"

namespace kiln::cuda {

namespace {

const LibrarySpec kDriverSpec{
    "the NVIDIA driver (libcuda)", "libcuda.so.1", "KILN_CUDA_DRIVER_LIBRARY",
    "kiln needs an NVIDIA GPU and its driver (https://www.nvidia.com/Download/index.aspx); "
    "kiln.cuda.is_available() says whether it found them.",
    nullptr};

constexpr const char* kNoDriver =
    "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
    "from http://www.nvidia.com/Download/index.aspx (kiln loads libcuda.so.1 at first use; "
    "kiln.cuda.is_available() is False)";

struct DriverState {
  std::once_flag once;
  DriverApi api{};
  bool loaded = false;       // libcuda loaded and cuInit succeeded
  int device_count = 0;
  std::string error;          // why not, when !loaded or no device
};

DriverState& state() {
  static DriverState s;
  return s;
}

void load(DriverState& s) {
  std::unique_ptr<DynamicLibrary> lib;
  try {
    lib = std::make_unique<DynamicLibrary>(kDriverSpec);
  } catch (const Error& e) {
    s.error = std::string(kNoDriver) + "\n" + e.what();
    return;
  }
  try {
    DriverApi& a = s.api;
    lib->resolve(a.cuInit, "cuInit");
    lib->resolve(a.cuDriverGetVersion, "cuDriverGetVersion");
    lib->resolve(a.cuGetErrorName, "cuGetErrorName");
    lib->resolve(a.cuGetErrorString, "cuGetErrorString");
    lib->resolve(a.cuDeviceGetCount, "cuDeviceGetCount");
    lib->resolve(a.cuDeviceGet, "cuDeviceGet");
    lib->resolve(a.cuDeviceGetName, "cuDeviceGetName");
    lib->resolve(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    lib->resolve(a.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
    lib->resolve(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    lib->resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent");
    lib->resolve(a.cuCtxGetCurrent, "cuCtxGetCurrent");
    lib->resolve(a.cuCtxSynchronize, "cuCtxSynchronize");
    lib->resolve(a.cuMemAlloc, "cuMemAlloc_v2");
    lib->resolve(a.cuMemFree, "cuMemFree_v2");
    lib->resolve(a.cuMemGetInfo, "cuMemGetInfo_v2");
    lib->resolve(a.cuMemHostAlloc, "cuMemHostAlloc");
    lib->resolve(a.cuMemFreeHost, "cuMemFreeHost");
    lib->resolve(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    lib->resolve(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    lib->resolve(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    lib->resolve(a.cuMemcpyPeerAsync, "cuMemcpyPeerAsync");
    lib->resolve(a.cuMemsetD8Async, "cuMemsetD8Async");
    lib->resolve(a.cuStreamCreateWithPriority, "cuStreamCreateWithPriority");
    lib->resolve(a.cuStreamDestroy, "cuStreamDestroy_v2");
    lib->resolve(a.cuStreamSynchronize, "cuStreamSynchronize");
    lib->resolve(a.cuStreamQuery, "cuStreamQuery");
    lib->resolve(a.cuStreamWaitEvent, "cuStreamWaitEvent");
    lib->resolve(a.cuEventCreate, "cuEventCreate");
    lib->resolve(a.cuEventDestroy, "cuEventDestroy_v2");
    lib->resolve(a.cuEventRecord, "cuEventRecord");
    lib->resolve(a.cuEventSynchronize, "cuEventSynchronize");
    lib->resolve(a.cuEventQuery, "cuEventQuery");
    // CUDA 12.8 added the _v2 spelling that cuda.h 13 maps cuEventElapsedTime to.
    a.cuEventElapsedTime = reinterpret_cast<decltype(a.cuEventElapsedTime)>(lib->try_symbol("cuEventElapsedTime_v2"));
    if (a.cuEventElapsedTime == nullptr) lib->resolve(a.cuEventElapsedTime, "cuEventElapsedTime");
    lib->resolve(a.cuModuleLoadData, "cuModuleLoadData");
    lib->resolve(a.cuModuleUnload, "cuModuleUnload");
    lib->resolve(a.cuModuleGetFunction, "cuModuleGetFunction");
    lib->resolve(a.cuLaunchKernel, "cuLaunchKernel");
    // Optional: without them CUDA-graph replay falls back to plain launches (CudaGraph.h).
    const auto optional = [&](auto& slot, const char* name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(lib->try_symbol(name));
    };
    optional(a.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    optional(a.cuStreamEndCapture, "cuStreamEndCapture");
    optional(a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    optional(a.cuGraphLaunch, "cuGraphLaunch");
    optional(a.cuGraphExecDestroy, "cuGraphExecDestroy");
    optional(a.cuGraphDestroy, "cuGraphDestroy");
  } catch (const Error& e) {
    s.error = e.what();
    return;
  }
  const CUresult init = s.api.cuInit(0);
  if (init != kCudaSuccess) {
    const char* name = nullptr;
    s.api.cuGetErrorName(init, &name);
    s.error = std::string(kNoDriver) + "\ncuInit failed: " + (name ? name : std::to_string(init));
    return;
  }
  s.loaded = true;
  if (s.api.cuDeviceGetCount(&s.device_count) != kCudaSuccess) s.device_count = 0;
  if (s.device_count == 0) s.error = "the NVIDIA driver is loaded but reports no CUDA device";
  lib.release();  // never unloaded
}

DriverState& loaded_state() {
  DriverState& s = state();
  std::call_once(s.once, [&] { load(s); });
  return s;
}

}  // namespace

const DriverApi& driver() {
  DriverState& s = loaded_state();
  KILN_CHECK(s.loaded, s.error);
  return s.api;
}

bool driver_available() {
  DriverState& s = loaded_state();
  return s.loaded && s.device_count > 0;
}

const char* unavailable_reason() {
  DriverState& s = loaded_state();
  return driver_available() ? "" : s.error.c_str();
}

const char* no_driver_message() { return kNoDriver; }

void check(CUresult result, const char* what) {
  if (result == kCudaSuccess) return;
  const DriverApi& a = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  a.cuGetErrorName(result, &name);
  a.cuGetErrorString(result, &text);
  if (result == kCudaErrorOutOfMemory) {
    KILN_FAIL(OutOfMemory, "CUDA out of memory in ", what, " (", name ? name : "?", ")");
  }
  KILN_FAIL(Runtime, "CUDA error: ", name ? name : "unknown", " (", text ? text : "no description", ") in ", what);
}

}  // namespace kiln::cuda
