// Copies that involve CUDA memory (device to device, host to device, device to
// host, with dtype conversion), fills, and moving a tensor between devices.
// The CPU copy helpers (eager/kernels/cpu/copy) hand CUDA cases here.
#pragma once

#include <optional>

#include "eager/core/MemoryFormat.h"
#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// dst <- src (src broadcast to dst's shape), converting dtypes; at least one
/// of them is a CUDA tensor. Host-side transfers wait for the copy unless
/// `non_blocking` and the host tensor is pinned, as torch's.
void cuda_copy(const Tensor& dst, const Tensor& src, bool non_blocking);

/// Every element of the CUDA tensor `self` = value (converted as fill_ converts).
void cuda_fill(const Tensor& self, const Scalar& value);

/// _to_copy where the source or the target device is CUDA: a new tensor on
/// `device` with `dtype` (self's when absent).
[[nodiscard]] Tensor to_copy_across_devices(const Tensor& self, std::optional<DType> dtype, Device device,
                                            bool non_blocking, std::optional<MemoryFormat> memory_format);

/// A CPU tensor with self's values in page-locked memory (Tensor.pin_memory()).
[[nodiscard]] Tensor pin_memory(const Tensor& self);
/// Whether self's storage is page-locked memory from pin_memory (never loads the driver).
[[nodiscard]] bool is_pinned(const Tensor& self);

}  // namespace kiln::native
