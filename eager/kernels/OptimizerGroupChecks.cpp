// See OptimizerGroupChecks.h.
#include "eager/kernels/OptimizerGroupChecks.h"

#include "eager/core/Error.h"

namespace kiln::native {

void check_optimizer_group(const char* op, TensorList params,
                           std::initializer_list<std::pair<const char*, TensorList>> lists) {
  for (const auto& [name, list] : lists) {
    KILN_CHECK(list.empty() || list.size() == params.size(), op, ": expected ", params.size(), " tensors in ", name,
               ", got ", list.size());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    KILN_CHECK(p.dtype() == DType::Float32 || p.dtype() == DType::Float64, op,
               ": parameters must be float32 or float64, got ", p.dtype());
    for (const auto& [name, list] : lists) {
      if (list.empty()) continue;
      const Tensor& t = list[i];
      KILN_CHECK(t.dtype() == p.dtype() && t.numel() == p.numel() && t.is_contiguous(), op, ": ", name, "[", i,
                 "] must be a contiguous ", p.dtype(), " tensor with ", p.numel(), " elements");
      KILN_CHECK(t.device() == p.device(), "Expected all tensors to be on the same device, but found at least two "
                 "devices, ", p.device(), " and ", t.device(), "! (in ", op, ")");
    }
    KILN_CHECK(p.is_contiguous(), op, ": parameter ", i, " must be contiguous");
  }
}

}  // namespace kiln::native
