// softmax and log_softmax (forward and backward): argument checks, dtype
// handling and the [outer, dim, inner] view, compiled once; the loops are in
// per_capability/SoftmaxKernel.cpp.
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/SoftmaxStubs.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(softmax_fn, softmax_stub);
KILN_DEFINE_DISPATCH(softmax_backward_fn, softmax_backward_stub);

// Note [Softmax computes in float]
// --------------------------------
// softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m) with m = max_j x_j, and
// log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m)): subtracting the max
// keeps exp from overflowing, and log_softmax never takes the log of a
// rounded quotient. float16/bfloat16 rows are widened to float, computed and
// rounded once on the way out (PyTorch's opmath); float64 computes in double.
// With dtype= the input is first converted to dtype (as x.to(dtype) would
// round it), then computed as above. The backward ops read the forward's
// output, never its input: softmax' = y * (g - <g, y>), log_softmax' =
// g - exp(y) * sum(g), again in float for the reduced types.

namespace {

SoftmaxShape softmax_shape(const Tensor& t, int64_t dim) {
  SoftmaxShape s;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) s.outer *= t.size(d);
    if (d == dim) s.dim = t.size(d);
    if (d > dim) s.inner *= t.size(d);
  }
  return s;
}

void check_softmax_dtype(DType dtype, const char* kernel) {
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype), "\"", kernel, "\" not implemented for '",
                             scalar_type_name(dtype), "'");
}

Tensor softmax_forward(const Tensor& self, int64_t dim, DType out_dtype, bool log) {
  const int64_t wrapped = wrap_dim(dim, self.dim());
  check_softmax_dtype(out_dtype, log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl");
  const Tensor in = self.dtype() == out_dtype ? contiguous_values(self) : to_dtype_copy(self, out_dtype);
  Tensor out = empty(self.sizes(), out_dtype, self.device());
  if (out.numel() == 0) return out;
  softmax_stub(in, out, softmax_shape(in, wrapped), log);
  return out;
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype, bool log) {
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  KILN_CHECK(grad_output.sizes().size() == output.sizes().size() &&
                 std::equal(grad_output.sizes().begin(), grad_output.sizes().end(), output.sizes().begin()),
             op, ": grad_output of shape ", grad_output.sizes(), " does not match output of shape ", output.sizes());
  KILN_CHECK(grad_output.dtype() == output.dtype(), op, ": expected grad_output and output to have the same dtype, ",
             "but got ", scalar_type_name(grad_output.dtype()), " and ", scalar_type_name(output.dtype()));
  check_softmax_dtype(output.dtype(), op);
  check_softmax_dtype(input_dtype, op);
  const int64_t wrapped = wrap_dim(dim, output.dim());
  Tensor grad_input = empty(output.sizes(), input_dtype, output.device());
  if (grad_input.numel() == 0) return grad_input;
  softmax_backward_stub(contiguous_values(grad_output), contiguous_values(output), grad_input,
                        softmax_shape(output, wrapped), log);
  return grad_input;
}

DType half_to_float_dtype(const Tensor& self, bool half_to_float) {
  KILN_CHECK(!half_to_float, "softmax with half to float conversion is not supported on CPU");
  return self.dtype();
}

}  // namespace

Tensor softmax_int_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_forward(self, dim, dtype.value_or(self.dtype()), false);
}

Tensor log_softmax_int_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_forward(self, dim, dtype.value_or(self.dtype()), true);
}

Tensor softmax_cpu(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward(self, dim, half_to_float_dtype(self, half_to_float), false);
}

Tensor log_softmax_cpu(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward(self, dim, half_to_float_dtype(self, half_to_float), true);
}

Tensor softmax_backward_data_cpu(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype) {
  return softmax_backward(grad_output, output, dim, input_dtype, false);
}

Tensor log_softmax_backward_data_cpu(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                     DType input_dtype) {
  return softmax_backward(grad_output, output, dim, input_dtype, true);
}

}  // namespace kiln::native
