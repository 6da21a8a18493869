// The argument checks of gather, scatter and scatter_reduce (ScatterGatherChecks.h).
#include "eager/kernels/cpu/indexing/ScatterGatherChecks.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "eager/core/Error.h"

namespace kiln::native::indexing {

int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

void check_index_dtype(const char* op, const Tensor& index) {
  KILN_CHECK(index.numel() == 0 || index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
             "(): Expected dtype int32/int64 for index");
}

void scatter_shape_check(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  if (index.numel() == 0) return;
  const int64_t dims = nonempty_dim(self);
  KILN_CHECK(dims == nonempty_dim(index), "Index tensor must have the same number of dimensions as self tensor");
  KILN_CHECK(src == nullptr || nonempty_dim(*src) == dims,
             "Index tensor must have the same number of dimensions as src tensor");
  bool wrong = false;
  for (int64_t d = 0; d < dims && !wrong; ++d) {
    if (d != dim && nonempty_size(index, d) > nonempty_size(self, d)) wrong = true;
  }
  if (!wrong && src != nullptr) {
    for (int64_t d = 0; d < dims && !wrong; ++d) {
      if (nonempty_size(index, d) > nonempty_size(*src, d)) wrong = true;
    }
  }
  if (src != nullptr) {
    KILN_CHECK(!wrong, "Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
               " apart from dimension ", dim, " and to be no larger size than src ", src->sizes());
  }
  KILN_CHECK(!wrong, "Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
             " apart from dimension ", dim);
}

PutReduce reduce_from_name(std::string_view reduce) {
  if (reduce == "add") return PutReduce::Add;
  if (reduce == "multiply") return PutReduce::Multiply;
  KILN_FAIL(Runtime, "reduce argument must be either add or multiply.");
}

void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                   std::optional<std::string_view> reduce) {
  check_index_dtype("scatter", index);
  if (src != nullptr) {
    KILN_CHECK(self.dtype() == src->dtype(), "scatter(): Expected self.dtype to be equal to src.dtype");
  }
  scatter_shape_check(self, dim, index, src);
  if (reduce) (void)reduce_from_name(*reduce);
}

PutReduce scatter_reduction(std::string_view reduce) {
  if (reduce == "sum" || reduce == "mean") return PutReduce::Add;
  if (reduce == "prod") return PutReduce::Multiply;
  if (reduce == "amax") return PutReduce::Max;
  if (reduce == "amin") return PutReduce::Min;
  KILN_FAIL(Runtime, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

Scalar reduction_identity(std::string_view reduce, DType dtype) {
  if (reduce == "prod") return Scalar(int64_t{1});
  if (reduce != "amax" && reduce != "amin") return Scalar(int64_t{0});
  const bool max = reduce == "amax";
  if (is_floating_point(dtype)) return Scalar(max ? -std::numeric_limits<double>::infinity()
                                                  : std::numeric_limits<double>::infinity());
  if (dtype == DType::Bool) return Scalar(!max);
  int64_t low = 0, high = 0;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      low = static_cast<int64_t>(std::numeric_limits<T>::lowest());
      high = static_cast<int64_t>(std::numeric_limits<T>::max());
    }
  });
  return Scalar(max ? low : high);
}

void check_scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce) {
  check_scatter(self, dim, index, &src, std::nullopt);
  (void)scatter_reduction(reduce);
}

void check_scatter_reduce_dtype(DType dtype, std::string_view reduce, const char* device) {
  KILN_CHECK_NOT_IMPLEMENTED(!(reduce == "mean" && dtype == DType::Bool), "\"scatter_gather_tensor_", device,
                             "_reduce_mean\" not implemented for 'Bool'");
  // complex numbers are not ordered: refused before any write, naming torch's kernel
  KILN_CHECK_NOT_IMPLEMENTED(!(is_complex(dtype) && (reduce == "amax" || reduce == "amin")),
                             "\"scatter_gather_tensor_", device, "_reduce_", reduce, "\" not implemented for '",
                             scalar_type_name(dtype), "'");
}

}  // namespace kiln::native::indexing
