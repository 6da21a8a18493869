// dtype and device conversions: _to_copy (a new tensor laid out by
// memory_format, values converted as copy_ converts them) and the `to` forms
// over it, which return self when nothing would change (PyTorch's
// to_will_alias) unless copy=True.
#include <optional>

#include "eager/autograd/GradMode.h"
#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// Whether `to` may return self: same dtype and device, and a layout that already meets memory_format.
bool to_will_alias(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool copy,
                   std::optional<MemoryFormat> memory_format) {
  if (copy) return false;
  if (dtype && *dtype != self.dtype()) return false;
  if (device && device->type() != self.device().type()) return false;
  if (device && device->index() >= 0 && self.device().index() >= 0 && device->index() != self.device().index()) {
    return false;
  }
  const MemoryFormat format = memory_format.value_or(MemoryFormat::Preserve);
  return format == MemoryFormat::Preserve || suggest_memory_format(self) == format;  // PyTorch's rule
}

Tensor to_impl(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool non_blocking,
               bool copy, std::optional<MemoryFormat> memory_format) {
  if (to_will_alias(self, dtype, device, copy, memory_format)) return self;
  if (dtype && !is_differentiable_dtype(*dtype)) {
    // An integer or bool result has no gradient (PyTorch: not differentiable), so no history.
    autograd::NoGradGuard no_grad;
    return kiln::_to_copy(self, dtype, device, non_blocking, memory_format);
  }
  return kiln::_to_copy(self, dtype, device, non_blocking, memory_format);
}

}  // namespace

Tensor _to_copy_cpu(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool non_blocking,
                    std::optional<MemoryFormat> memory_format) {
  if (device && device->is_cuda()) return to_copy_across_devices(self, dtype, *device, non_blocking, memory_format);
  KILN_CHECK(!device || device->is_cpu() || device->is_meta(), "_to_copy: kiln's eager kernels cannot copy to device '",
             *device, "' yet (only cpu, cuda and meta)");
  // Out of a meta tensor there is nothing to copy (copy_ says so, as PyTorch).
  KILN_CHECK_NOT_IMPLEMENTED(!self.device().is_meta() || !device || device->is_meta(),
                             "Cannot copy out of meta tensor; no data!");
  Tensor result = empty_like_format(self, memory_format.value_or(MemoryFormat::Preserve), dtype.value_or(self.dtype()),
                                    device.value_or(self.device()));
  copy_(result, self);
  return result;
}

Tensor to_dtype_layout(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                       bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) {
  return to_impl(self, dtype, device, non_blocking, copy, memory_format);
}
Tensor to_device(const Tensor& self, Device device, DType dtype, bool non_blocking, bool copy,
                 std::optional<MemoryFormat> memory_format) {
  return to_impl(self, dtype, device, non_blocking, copy, memory_format);
}
Tensor to_dtype(const Tensor& self, DType dtype, bool non_blocking, bool copy,
                std::optional<MemoryFormat> memory_format) {
  return to_impl(self, dtype, std::nullopt, non_blocking, copy, memory_format);
}
Tensor to_other(const Tensor& self, const Tensor& other, bool non_blocking, bool copy,
                std::optional<MemoryFormat> memory_format) {
  return to_impl(self, other.dtype(), other.device(), non_blocking, copy, memory_format);
}
Tensor type_as(const Tensor& self, const Tensor& other) {
  return to_impl(self, other.dtype(), other.device(), false, false, std::nullopt);
}

}  // namespace kiln::native
