// Ops driven by a mask: nonzero (and its per-dim form behind as_tuple=True),
// masked_select and masked_scatter_. A mask becomes index columns through
// nonzero, then the advanced-indexing plan does the rest (IndexAdvanced.h).
#include <algorithm>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexAdvanced.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

using namespace indexing;

namespace {

/// Elements per chunk of nonzero's two passes: fixed, so results never depend on the thread count.
constexpr int64_t kNonzeroChunk = 32768;

Tensor nonzero_write(const Tensor& out, const Tensor& self) {
  if (out.defined()) {
    KILN_CHECK(out.dtype() == DType::Int64, "nonzero: Expected out tensor to have scalar type Long but got scalar type",
               scalar_type_name(out.dtype()));
    check_no_overlap(out, self);
  }
  const Tensor values = contiguous(self);
  const int64_t numel = values.numel();
  const int64_t n_chunks = (numel + kNonzeroChunk - 1) / kNonzeroChunk;
  std::vector<int64_t> first_row(static_cast<size_t>(n_chunks) + 1, 0);
  if (n_chunks > 0) nonzero_count_stub(values, kNonzeroChunk, first_row.data() + 1);
  for (size_t c = 1; c < first_row.size(); ++c) first_row[c] += first_row[c - 1];  // counts -> first rows
  // PyTorch lays the result out column-major, (n, ndim) with strides (1, n), so each
  // dim's column (nonzero(as_tuple=True), mask indexing) is contiguous. An out= tensor of
  // the right shape keeps its strides.
  const int64_t n = first_row.back();
  const int64_t ndim = self.dim();
  Tensor result = out;
  if (!result.defined()) {
    result = empty_strided(IntArrayRef{n, ndim}, IntArrayRef{1, std::max<int64_t>(n, 1)}, DType::Int64, self.device());
  } else if (!(result.dim() == 2 && result.size(0) == n && result.size(1) == ndim)) {
    resize_output(result, IntArrayRef{ndim, n});
    result.impl()->set_geometry(IntArrayRef{n, ndim}, IntArrayRef{result.stride(1), result.stride(0)},
                                result.storage_offset());
  }
  if (first_row.back() > 0) nonzero_fill_stub(values, kNonzeroChunk, first_row.data(), result);
  return result;
}

/// The positions `mask` (broadcast to self's shape) selects in `self`, as an advanced-index plan
/// with one flat index dim; 0-dim tensors are read as one element.
AdvancedIndex mask_plan(const Tensor& self, const Tensor& mask) {
  const std::optional<Tensor> indices[] = {at_least_1d(mask)};
  return make_advanced_index(at_least_1d(self), OptionalTensorList(indices, 1));
}

Tensor masked_select_write(const Tensor& out, const Tensor& self, const Tensor& mask) {
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask");
  if (out.defined()) {
    KILN_CHECK(self.dtype() == out.dtype(), "masked_select(): self and result must have the same scalar type");
    check_no_internal_overlap(out);
    check_disjoint(out, self);
    check_disjoint(out, mask);
  }
  const DimVector shape = broadcast_shapes(mask.sizes(), self.sizes());
  const AdvancedIndex plan = mask_plan(expand_to(self, shape), expand_to(mask, shape));
  const Tensor offsets = plan.offsets();
  if (out.defined()) resize_output(out, plan.result_shape);
  return run_gather(out, plan.restrided_self(), offsets, self.dtype());
}

}  // namespace

// The kernels indexing.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).
Tensor nonzero_into(ResultInto into, const Tensor& out, const Tensor& self) {
  if (into == ResultInto::NewTensor) return nonzero_write(Tensor(), self);
  nonzero_write(out, self);
  out.impl()->bump_version();
  return out;
}

std::vector<Tensor> nonzero_numpy_cpu(const Tensor& self) {
  // numpy's rule: a 0-dim tensor reads as one element (np.array(5).nonzero() == (array([0]),)).
  const Tensor nonzero = nonzero_cpu(at_least_1d(self));
  std::vector<Tensor> columns;
  for (int64_t j = 0; j < nonzero.size(1); ++j) columns.push_back(select_impl(nonzero, 1, j));
  return columns;
}

Tensor masked_select_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& mask) {
  if (into == ResultInto::NewTensor) return masked_select_write(Tensor(), self, mask);
  masked_select_write(out, self, mask);
  out.impl()->bump_version();
  return out;
}

namespace {

Tensor masked_scatter_inplace(const Tensor& self, const Tensor& mask, const Tensor& source) {
  check_no_internal_overlap(self);
  KILN_CHECK(self.dtype() == source.dtype(), "masked_scatter: expected self and source to have same dtypes but got",
             scalar_type_name(self.dtype()), " and ", scalar_type_name(source.dtype()));
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
             scalar_type_name(mask.dtype()));
  check_expandable(mask, self.sizes());
  const AdvancedIndex plan = mask_plan(self, expand_to(mask, self.sizes()));
  const int64_t count = plan.index_shape[0];
  KILN_CHECK(source.numel() >= count, "Number of elements of source < number of ones in mask");
  const Tensor offsets = plan.offsets();
  if (count == 0) return self;
  // The first `count` elements of source, in row-major order, fill the selected places in order.
  const Tensor values = restride(contiguous(source), IntArrayRef{count}, IntArrayRef{1});
  DimVector value_strides(plan.result_shape.size(), 0);
  value_strides[0] = 1;
  run_put(plan.restrided_self(), restride(values, plan.result_shape, value_strides), offsets, PutReduce::Assign);
  self.impl()->bump_version();
  return self;
}

Tensor masked_scatter_functional(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const DimVector shape = broadcast_shapes(mask.sizes(), self.sizes());
  const Tensor result = clone_contiguous(expand_to(self, shape));
  return masked_scatter_inplace(result, expand_to(mask, shape), source);
}

}  // namespace

Tensor masked_scatter_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& mask,
                           const Tensor& source) {
  switch (into) {
    case ResultInto::NewTensor: return masked_scatter_functional(self, mask, source);
    case ResultInto::InPlace: return masked_scatter_inplace(self, mask, source);
    case ResultInto::Out: break;
  }
  return copy_to_out(masked_scatter_functional(self, mask, source), out);
}

}  // namespace kiln::native
