// resize_output: PyTorch's out= resizing rule.
#include "eager/kernels/Resize.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/TypePromotion.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

void resize_output(const Tensor& out, IntArrayRef shape) {
  if (out.sizes().size() == shape.size() && std::equal(shape.begin(), shape.end(), out.sizes().begin())) return;
  if (out.numel() != 0) {
    KILN_WARN("An output with one or more elements was resized since it had shape ", out.sizes(),
              ", which does not match the required output shape ", shape,
              ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless "
              "they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
              "elements with t.resize_(0).");
  }
  out.impl()->resize(shape);
}

Tensor copy_to_out(const Tensor& result, const Tensor& out) {
  resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

Tensor copy_castable_to_out(const Tensor& result, const Tensor& out) {
  KILN_CHECK(can_cast(result.dtype(), out.dtype()), "result type ", scalar_type_name(result.dtype()),
             " can't be cast to the desired output type ", scalar_type_name(out.dtype()));
  return copy_to_out(result, out);
}

// --- the ops (shape.yaml) ------------------------------------------------------------

/// Tensor.resize_: the new shape, contiguous, keeping the storage when it is big enough.
Tensor resize_cpu_(const Tensor& self, IntArrayRef size, std::optional<MemoryFormat> memory_format) {
  KILN_CHECK(!memory_format || *memory_format == MemoryFormat::Contiguous || *memory_format == MemoryFormat::Preserve,
             "resize_: only contiguous_format is supported");
  for (int64_t s : size) KILN_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  self.impl()->resize(size);
  self.impl()->bump_version();
  return self;
}

/// The out= tail of Python-level ops: dst resized as out= tensors are, then result copied in.
Tensor copy_to_out_cpu(const Tensor& result, const Tensor& dst) { return copy_castable_to_out(result, dst); }

}  // namespace kiln::native
