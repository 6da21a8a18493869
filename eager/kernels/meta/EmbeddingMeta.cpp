// The meta kernels of embedding and its dense backward (nn.yaml, `dispatch: Meta:`).
// Their CPU kernels check every index against the table before reading a row,
// which needs the indices' values, so their meta functions are written apart: the
// checks that need only metadata, and the output's geometry (Note [Meta kernels],
// tools/opgen/README.md).
#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/MetaFunctions.h"

namespace kiln::native {

namespace {

void check_indices_dtype(const Tensor& indices) {
  KILN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
             legacy_tensor_name(indices.dtype()), " instead (while checking arguments for embedding)");
}

}  // namespace

Tensor embedding_meta(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                      bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  KILN_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  check_indices_dtype(indices);
  DimVector shape(indices.sizes());
  shape.push_back(weight.size(1));
  return empty(shape, weight.dtype(), Device(DeviceType::Meta));
}

Tensor embedding_dense_backward_meta(const Tensor& grad_output, const Tensor& indices, IntArrayRef weight_sizes,
                                     int64_t /*padding_idx*/, bool /*scale_grad_by_freq*/) {
  KILN_CHECK(weight_sizes.size() == 2, "_embedding_dense_backward: weight_sizes must have 2 elements");
  check_indices_dtype(indices);
  KILN_CHECK(grad_output.numel() == indices.numel() * weight_sizes[1], "embedding_backward: grad_output of shape ",
             grad_output.sizes(), " does not match indices of shape ", indices.sizes(), " and embedding dim ",
             weight_sizes[1]);
  return empty(weight_sizes, grad_output.dtype(), Device(DeviceType::Meta));
}

}  // namespace kiln::native
