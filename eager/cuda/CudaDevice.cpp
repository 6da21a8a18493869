// Devices and their primary contexts.
#include "eager/cuda/CudaDevice.h"

#include <array>
#include <mutex>

#include "eager/core/Error.h"

namespace kiln::cuda {

namespace {

constexpr int kMaxDevices = 64;
thread_local int t_current_device = 0;

std::mutex g_context_mutex;
std::array<CUcontext, kMaxDevices> g_contexts{};

}  // namespace

int device_count() {
  if (!driver_available()) return 0;
  int count = 0;
  if (driver().cuDeviceGetCount(&count) != kCudaSuccess) return 0;
  return count < kMaxDevices ? count : kMaxDevices;
}

void require_cuda() {
  (void)driver();  // throws the no-driver error
  KILN_CHECK(device_count() > 0, "kiln.cuda: ", unavailable_reason());
}

int checked_device(int device) {
  require_cuda();
  if (device < 0) return t_current_device;
  const int count = device_count();
  KILN_CHECK(device < count, "CUDA error: invalid device ordinal: device ", device, " was asked for but ", count,
             count == 1 ? " CUDA device is" : " CUDA devices are", " available");
  return device;
}

CUcontext primary_context(int device) {
  std::lock_guard<std::mutex> lock(g_context_mutex);
  CUcontext& ctx = g_contexts[static_cast<size_t>(device)];
  if (ctx == nullptr) {
    CUdevice dev = 0;
    check(driver().cuDeviceGet(&dev, device), "cuDeviceGet");
    check(driver().cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  }
  return ctx;
}

void activate_context(int device) {
  CUcontext want = primary_context(device);
  CUcontext have = nullptr;
  check(driver().cuCtxGetCurrent(&have), "cuCtxGetCurrent");
  if (have != want) check(driver().cuCtxSetCurrent(want), "cuCtxSetCurrent");
}

int current_device() {
  require_cuda();
  return t_current_device;
}

void set_device(int device) {
  device = checked_device(device);
  activate_context(device);
  t_current_device = device;
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()), changed_(device >= 0 && device != previous_) {
  if (changed_) {
    set_device(device);
  } else {
    activate_context(previous_);
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) {
    t_current_device = previous_;
    driver().cuCtxSetCurrent(primary_context(previous_));
  }
}

DeviceProperties device_properties(int device) {
  device = checked_device(device);
  const DriverApi& d = driver();
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
  DeviceProperties p;
  std::array<char, 256> name{};
  check(d.cuDeviceGetName(name.data(), static_cast<int>(name.size()), dev), "cuDeviceGetName");
  p.name = name.data();
  auto attr = [&](int which) {
    int v = 0;
    check(d.cuDeviceGetAttribute(&v, which, dev), "cuDeviceGetAttribute");
    return v;
  };
  p.major = attr(kAttrComputeCapabilityMajor);
  p.minor = attr(kAttrComputeCapabilityMinor);
  size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  p.total_memory = static_cast<int64_t>(total);
  p.multi_processor_count = attr(kAttrMultiprocessorCount);
  p.max_threads_per_multi_processor = attr(kAttrMaxThreadsPerMultiprocessor);
  p.max_threads_per_block = attr(kAttrMaxThreadsPerBlock);
  p.warp_size = attr(kAttrWarpSize);
  p.l2_cache_size = attr(kAttrL2CacheSize);
  p.shared_memory_per_block = attr(kAttrMaxSharedMemoryPerBlock);
  p.is_integrated = attr(kAttrIntegrated) != 0;
  p.is_multi_gpu_board = attr(kAttrMultiGpuBoard) != 0;
  return p;
}

std::string device_arch(int device) {
  const DeviceProperties p = device_properties(device);
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
}

void synchronize_device(int device) {
  DeviceGuard guard(checked_device(device));
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace kiln::cuda
