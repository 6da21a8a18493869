// searchsorted: PyTorch's checks (Bucketization.cpp searchsorted_pre_check) in
// its order and words, operands promoted to a common dtype and made contiguous,
// then the binary search in per_capability/IndexSearchsortedKernel.cpp.
#include <algorithm>
#include <climits>
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/ResultInto.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

using namespace indexing;

namespace {

bool leading_dims_match(const Tensor& boundaries, const Tensor& input) {
  if (boundaries.dim() != input.dim()) return false;
  for (int64_t d = 0; d + 1 < boundaries.dim(); ++d) {
    if (boundaries.size(d) != input.size(d)) return false;
  }
  return true;
}

void pre_check(const Tensor& boundaries, const Tensor& input, DType out_dtype, bool out_int32, bool right,
               std::optional<std::string_view> side, const Tensor& sorter) {
  if (side) {
    KILN_CHECK(*side == "left" || *side == "right",
               "kiln.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    KILN_CHECK(!right || *side == "right", "kiln.searchsorted(): side and right can't be set to opposites, got side of ",
               *side, " while right was True");
  }
  if (sorter.defined()) {
    KILN_CHECK(std::equal(sorter.sizes().begin(), sorter.sizes().end(), boundaries.sizes().begin(),
                          boundaries.sizes().end()),
               "kiln.searchsorted(): boundary and sorter must have the same size, but got boundary tensor ",
               boundaries.sizes(), "and got sorter tensor ", sorter.sizes());
    KILN_CHECK(sorter.dtype() == DType::Int64, "kiln.searchsorted(): sorter must be a tensor of long dtype but got dtype ",
               scalar_type_name(sorter.dtype()));
    if (sorter.numel() > 0) {
      const Tensor s = contiguous(sorter);
      const int64_t* data = s.data_ptr<int64_t>();
      const auto [lo, hi] = std::minmax_element(data, data + s.numel());
      KILN_CHECK(*lo >= 0 && *hi < sorter.size(-1), "kiln.searchsorted(): sorter index out of range");
    }
  }
  KILN_CHECK(input.dim() > 0 || (input.dim() == 0 && input.numel() == 1 && boundaries.dim() == 1),
             "kiln.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got ",
             "boundaries tensor dim(", boundaries.dim(), ") and input value's dim(", input.dim(), ") numel(",
             input.numel(), ")");
  KILN_CHECK(boundaries.dim() != 0,
             "kiln.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
  KILN_CHECK(boundaries.dim() == 1 || leading_dims_match(boundaries, input),
             "kiln.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
             "tensor and input value tensor must match, but we got boundaries tensor ", boundaries.sizes(),
             " and input value tensor ", input.sizes());
  KILN_CHECK((out_dtype == DType::Int64 && !out_int32) || (out_dtype == DType::Int32 && out_int32),
             "kiln.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending "
             "on whether out_int32 flag is True, but we got output tensor's dtype ", scalar_type_name(out_dtype),
             " and out_int32 flag is ", out_int32 ? "True" : "False");
  if (out_int32) {
    KILN_CHECK(boundaries.size(-1) < INT_MAX,
               "kiln.searchsorted(): the size of boundaries' last dimension should be less than ", INT_MAX,
               ", but we got ", boundaries.size(-1));
  }
}

Tensor search_into(const Tensor& out, const Tensor& boundaries, const Tensor& input, bool out_int32, bool right,
                         std::optional<std::string_view> side, const std::optional<Tensor>& sorter_opt) {
  const Tensor sorter = sorter_opt.value_or(Tensor());
  const DType out_dtype = out.defined() ? out.dtype() : (out_int32 ? DType::Int32 : DType::Int64);
  pre_check(boundaries, input, out_dtype, out_int32, right, side, sorter);
  Tensor result = out;
  if (result.defined()) {
    resize_output(result, input.sizes());
  } else {
    result = empty(input.sizes(), out_dtype, boundaries.device());  // a Python number input is a CPU scalar
  }
  if (input.numel() == 0) return result;
  const bool is_right = side ? *side == "right" : right;
  ResultTypeState state;
  state.update(boundaries);
  state.update(input);
  const DType common = state.result();
  KILN_CHECK_NOT_IMPLEMENTED(common != DType::Bool, "\"searchsorted_out_cpu\" not implemented for 'Bool'");
  auto prepared = [common](const Tensor& t) { return t.dtype() == common ? contiguous(t) : to_dtype_copy(t, common); };
  const Tensor dst = result.is_contiguous() ? result : empty(result.sizes(), out_dtype, result.device());
  searchsorted_stub(dst, prepared(input), prepared(boundaries), sorter.defined() ? contiguous(sorter) : Tensor(),
                    is_right);
  if (!dst.is_same(result)) kiln::copy_(result, dst);
  return result;
}

}  // namespace

// The kernel of the four overloads (Note [Three ways to write a result]); the
// Scalar ones pass `self` as a wrapped number (Note [Generated entry points]).
Tensor searchsorted_into(ResultInto into, const Tensor& out, const Tensor& sorted_sequence, const Tensor& self,
                         bool out_int32, bool right, std::optional<std::string_view> side,
                         const std::optional<Tensor>& sorter) {
  const Tensor result = search_into(into == ResultInto::Out ? out : Tensor(), sorted_sequence, self, out_int32, right,
                                    side, sorter);
  if (into == ResultInto::Out) out.impl()->bump_version();
  return result;
}

}  // namespace kiln::native
