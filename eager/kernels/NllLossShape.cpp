// See NllLossShape.h.
#include "eager/kernels/NllLossShape.h"

#include "eager/core/DType.h"
#include "eager/core/Error.h"

namespace kiln::native {

NllShape check_nll_arguments(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                             int64_t reduction) {
  KILN_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  KILN_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch = self.dim() == 1 && target.dim() == 0;
  KILN_CHECK_VALUE(no_batch || self.size(0) == target.size(0), "Expected input batch_size (", self.size(0),
                   ") to match target batch_size (", target.dim() ? target.size(0) : 1, ").");
  KILN_CHECK(target.dtype() == DType::Int64 || target.dtype() == DType::UInt8,
             "expected scalar type Long but found ", scalar_type_name(target.dtype()));
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(self.dtype()), "\"nll_loss_out_frame\" not implemented for '",
                             scalar_type_name(self.dtype()), "'");
  KILN_CHECK(reduction >= 0 && reduction <= 2, reduction, " is not a valid value for reduction");
  NllShape s;
  s.batched = self.dim() == 2;
  s.batch = s.batched ? self.size(0) : 1;
  s.classes = self.size(-1);
  if (weight && weight->defined()) {
    KILN_CHECK(weight->numel() == s.classes, "weight tensor should be defined either for all ", s.classes,
               " classes or no classes but got weight tensor of shape: ", weight->sizes());
    KILN_CHECK(weight->dtype() == self.dtype(), "expected scalar type ", scalar_type_name(self.dtype()),
               " but found ", scalar_type_name(weight->dtype()));
  }
  return s;
}

}  // namespace kiln::native
