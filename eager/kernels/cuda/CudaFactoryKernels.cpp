// The CUDA kernels of the creation and copy ops: empty, empty_strided, zeros,
// ones, full, fill_, copy_, _to_copy, clone.
#include <optional>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"

namespace kiln::native {

namespace {

/// The CUDA device a factory call means: "cuda" is the current device.
Device cuda_device(std::optional<Device> device) {
  const Device d = device.value_or(Device(DeviceType::CUDA));
  KILN_INTERNAL_ASSERT(d.is_cuda(), "a CUDA factory kernel got device ", d);
  const int index = cuda::checked_device(d.index());
  return Device(DeviceType::CUDA, static_cast<int8_t>(index));
}

Tensor empty_strided_cuda(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype,
                          std::optional<Device> device) {
  const Device d = cuda_device(device);
  cuda::DeviceGuard guard(d.index());
  return kiln::empty_strided(size, stride, dtype.value_or(default_dtype()), d);
}

Tensor empty_cuda(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  const Device d = cuda_device(device);
  cuda::DeviceGuard guard(d.index());
  return kiln::empty(size, dtype.value_or(default_dtype()), d);
}

Tensor full_cuda(IntArrayRef size, const Scalar& value, std::optional<DType> dtype, std::optional<Device> device) {
  Tensor t = empty_cuda(size, dtype.value_or(value.natural_dtype()), device);
  cuda_fill(t, value);
  return t;
}

Tensor zeros_cuda(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  for (int64_t s : size) KILN_CHECK(s >= 0, "zeros: Dimension size must be non-negative.");
  return full_cuda(size, Scalar(int64_t{0}), dtype.value_or(default_dtype()), device);
}

Tensor ones_cuda(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return full_cuda(size, Scalar(int64_t{1}), dtype.value_or(default_dtype()), device);
}

Tensor fill_cuda_(const Tensor& self, const Scalar& value) {
  cuda_fill(self, value);
  return self;
}

Tensor copy_cuda_(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.is_same(src)) return self;
  cuda_copy(self, src, non_blocking);
  return self;
}

Tensor to_copy_cuda(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool non_blocking,
                    std::optional<MemoryFormat> memory_format) {
  return to_copy_across_devices(self, dtype, device.value_or(self.device()), non_blocking, memory_format);
}

Tensor clone_cuda(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  return to_copy_across_devices(self, std::nullopt, self.device(), false, memory_format);
}

}  // namespace

void register_cuda_factory_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("empty", &empty_cuda);
  lib->impl("empty_strided", &empty_strided_cuda);
  lib->impl("zeros", &zeros_cuda);
  lib->impl("ones", &ones_cuda);
  lib->impl("full", &full_cuda);
  lib->impl("fill_.Scalar", &fill_cuda_);
  lib->impl("copy_", &copy_cuda_);
  lib->impl("_to_copy", &to_copy_cuda);
  lib->impl("clone", &clone_cuda);
}

}  // namespace kiln::native
