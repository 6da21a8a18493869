// CUDA devices: counting, the current device per thread, primary contexts, properties.
#pragma once

#include <cstdint>
#include <string>

#include "eager/cuda/DriverApi.h"

namespace kiln::cuda {

/// Number of CUDA devices; 0 (never an error) without a driver.
[[nodiscard]] int device_count();

/// The calling thread's current device (0 until set_device). Throws the
/// no-driver error when CUDA is unavailable.
[[nodiscard]] int current_device();
/// Makes `device` current on this thread (and its primary context current).
/// RuntimeError "Invalid device ordinal" style when out of range.
void set_device(int device);

/// Throws the no-driver error, or "no CUDA device" error, unless CUDA is usable.
void require_cuda();
/// RuntimeError unless 0 <= device < device_count(). -1 means the current device.
[[nodiscard]] int checked_device(int device);

/// Makes `device`'s primary context current on this thread (retaining it once).
void activate_context(int device);
[[nodiscard]] CUcontext primary_context(int device);

/// Sets the current device for a scope and restores the previous one.
class DeviceGuard {
 public:
  /// index -1: stays on the current device.
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
  bool changed_;
};

/// torch.cuda.get_device_properties' fields.
struct DeviceProperties {
  std::string name;
  int major = 0;
  int minor = 0;
  int64_t total_memory = 0;
  int multi_processor_count = 0;
  int max_threads_per_multi_processor = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  int64_t l2_cache_size = 0;
  int64_t shared_memory_per_block = 0;
  bool is_integrated = false;
  bool is_multi_gpu_board = false;
};
[[nodiscard]] DeviceProperties device_properties(int device);

/// "sm_90" for compute capability 9.0: the arch NVRTC compiles kernels for.
[[nodiscard]] std::string device_arch(int device);

/// Waits for all work on `device` (cuCtxSynchronize).
void synchronize_device(int device);

}  // namespace kiln::cuda
