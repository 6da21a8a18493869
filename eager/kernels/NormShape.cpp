// See NormShape.h.
#include "eager/kernels/NormShape.h"

#include <sstream>
#include <string>

#include "eager/core/Error.h"
#include "eager/core/DType.h"

namespace kiln::native {

namespace {

std::string list_text(IntArrayRef v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

}  // namespace

NormRows check_norm_arguments(const Tensor& input, IntArrayRef normalized_shape,
                              const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(k >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
                     "but got normalized_shape = ", list_text(normalized_shape));
  auto same = [&](const Tensor& t) {
    if (t.dim() != k) return false;
    for (int64_t d = 0; d < k; ++d) {
      if (t.size(d) != normalized_shape[static_cast<size_t>(d)]) return false;
    }
    return true;
  };
  KILN_CHECK(!weight || !weight->defined() || same(*weight), "Expected weight to be of same shape as normalized_shape, "
             "but got weight of shape ", list_text(weight ? weight->sizes() : IntArrayRef{}), " and normalized_shape = ",
             list_text(normalized_shape));
  KILN_CHECK(!bias || !bias->defined() || same(*bias), "Expected bias to be of same shape as normalized_shape, "
             "but got bias of shape ", list_text(bias ? bias->sizes() : IntArrayRef{}), " and normalized_shape = ",
             list_text(normalized_shape));
  bool fits = input.dim() >= k;
  for (int64_t d = 0; fits && d < k; ++d) {
    fits = input.size(input.dim() - k + d) == normalized_shape[static_cast<size_t>(d)];
  }
  if (!fits) {
    std::ostringstream os;
    os << "Given normalized_shape=" << list_text(normalized_shape) << ", expected input with shape [*";
    for (int64_t s : normalized_shape) os << ", " << s;
    os << "], but got input of size" << list_text(input.sizes());
    KILN_CHECK(false, os.str());
  }
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(input.dtype()), "\"LayerNormKernelImpl\" not implemented for '",
                             scalar_type_name(input.dtype()), "'");
  NormRows s;
  s.cols = 1;
  for (int64_t v : normalized_shape) s.cols *= v;
  s.rows = s.cols == 0 ? 0 : input.numel() / s.cols;
  if (s.cols == 0) {
    s.rows = 1;
    for (int64_t d = 0; d < input.dim() - k; ++d) s.rows *= input.size(d);
  }
  return s;
}

}  // namespace kiln::native
