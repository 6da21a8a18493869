// linalg_vector_norm (eager/ops/reduction.yaml): torch.linalg.vector_norm's
// checks and dtype rules, computed with the reductions (Note [Reductions as
// rows], the 1- and 2-norms in one pass: sum_of_terms); torch.norm's string orders are python/kiln/_norms.py's.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/reduce/ReduceOpsStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// The order as PyTorch prints it in messages: inf, -inf, 2, 0.5.
std::string order_name(double p) {
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  std::ostringstream s;
  if (p == std::floor(p) && std::abs(p) < 1e15) {
    s << static_cast<int64_t>(p);
  } else {
    s << p;
  }
  return s.str();
}

bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

}  // namespace

Tensor linalg_vector_norm_cpu(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim, bool keepdim,
                              std::optional<DType> dtype) {
  if (is_complex(self.dtype())) {
    // The norm of complex values is the norm of their magnitudes (a real result).
    KILN_CHECK(!dtype || is_complex(*dtype), "linalg.vector_norm: dtype should be complex for a complex input, but got ",
               scalar_type_name(*dtype));
    const Tensor source = dtype && *dtype != self.dtype() ? to_dtype_copy(self, *dtype) : self;
    return linalg_vector_norm_cpu(kiln::abs(source), ord, dim, keepdim, std::nullopt);
  }
  KILN_CHECK(is_floating_point(self.dtype()),
             "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
             scalar_type_name(self.dtype()));
  if (dtype) {
    KILN_CHECK(is_floating_point(*dtype), "linalg.vector_norm: dtype should be floating point or complex, but got ",
               scalar_type_name(*dtype));
    KILN_CHECK(promote_types(self.dtype(), *dtype) == *dtype, "linalg.vector_norm: the dtype of the input (",
               scalar_type_name(self.dtype()), ") should be convertible without narrowing to the specified dtype (",
               scalar_type_name(*dtype), ")");
  }
  const double p = ord.to_double();
  if (p < 0 || std::isinf(p)) {
    // No identity: every reduced dim must hold elements (PyTorch's wording, its missing space included).
    const std::string name = order_name(p);
    if (!dim || dim->empty()) {
      KILN_CHECK(self.numel() != 0, "linalg.vector_norm cannot compute the ", name,
                 " norm on an empty tensor because the operation does not have an identity");
    } else if (self.dim() > 0) {
      for (int64_t d : *dim) {
        const int64_t w = wrap_dim(d, self.dim());
        KILN_CHECK(self.size(w) != 0, "linalg.vector_norm cannot compute the ", name, " norm on the dimension ", w,
                   "because this dimension is empty and the operation does not have an identity");
      }
    }
  }
  const DType result = dtype.value_or(self.dtype());
  // float16/bfloat16 accumulate in float, as PyTorch.
  const DType work = is_reduced_float(result) ? DType::Float32 : result;
  const Tensor x = self.dtype() == work ? self : to_dtype_copy(self, work);
  const IntArrayRef dims = dim ? *dim : IntArrayRef();
  Tensor norm;
  if (p == 0) {
    norm = kiln::sum(kiln::ne(x, 0), dims, keepdim, work);
  } else if (p == 1) {
    norm = sum_of_terms(x, dims, keepdim, RowReduce::SumAbs);
  } else if (p == 2) {
    norm = kiln::sqrt(sum_of_terms(x, dims, keepdim, RowReduce::SumSquares));
  } else if (std::isinf(p)) {
    norm = p > 0 ? kiln::amax(kiln::abs(x), dims, keepdim) : kiln::amin(kiln::abs(x), dims, keepdim);
  } else {
    norm = kiln::pow(kiln::sum(kiln::pow(kiln::abs(x), p), dims, keepdim), 1.0 / p);
  }
  return norm.dtype() == result ? norm : to_dtype_copy(norm, result);
}

}  // namespace kiln::native
