// clone: a new tensor with self's values, laid out by memory_format
// (preserve_format by default: a dense layout keeps its strides, others keep
// their dims' order; see empty_like_format).
#include <optional>

#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

Tensor clone_cpu(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  Tensor result = empty_like_format(self, memory_format.value_or(MemoryFormat::Preserve));
  copy_same_dtype(result, self);
  return result;
}

}  // namespace kiln::native
