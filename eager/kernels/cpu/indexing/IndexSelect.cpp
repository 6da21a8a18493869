// Indexing along one dim with a vector of indices: index_select, index_add_,
// index_fill_, and take (indices into the flattened tensor). Checks in
// PyTorch's order and words; loops through Note [Indexing by byte offsets].
#include <optional>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

using namespace indexing;

namespace {

bool is_index_dtype(DType t) { return t == DType::Int64 || t == DType::Int32; }

/// `t` (at least 1-d) with dim `dim` replaced by `size` with stride `stride`.
Tensor along_dim(const Tensor& t, int64_t dim, int64_t size, int64_t stride) {
  DimVector sizes(t.sizes());
  DimVector strides(t.strides());
  sizes[static_cast<size_t>(dim)] = size;
  strides[static_cast<size_t>(dim)] = stride;
  return restride(t, sizes, strides);
}

/// Offsets of a vector of indices along `dim` of `self` (at least 1-d), laid along
/// `dim` of a tensor shaped like `shape` (stride 0 elsewhere); `bad` names an out-of-range index.
struct DimOffsets {
  Tensor offsets;
  std::optional<BadIndex> bad;
};
DimOffsets offsets_along(const Tensor& self, int64_t dim, const Tensor& index, IntArrayRef shape, IndexWrap wrap) {
  Tensor offsets;
  const Tensor index1 = at_least_1d(index);
  auto bad = compute_offsets(offsets, index1, self.size(dim), self.stride(dim) * self.itemsize(), wrap);
  if (bad) return {Tensor(), bad};
  DimVector strides(shape.size(), 0);
  strides[static_cast<size_t>(dim)] = offsets.stride(0);
  return {restride(offsets, shape, strides), std::nullopt};
}

// --- index_select ------------------------------------------------------------------------

Tensor index_select_write(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  const int64_t numel = index.numel();
  KILN_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  KILN_CHECK(!(self.dim() == 0 && numel != 1), "index_select(): Index to scalar can have only 1 value, got ", numel,
             " value(s)");
  KILN_CHECK(is_index_dtype(index.dtype()), "index_select(): Expected dtype int32 or int64 for index");
  if (out.defined()) {
    KILN_CHECK(self.dtype() == out.dtype(), "index_select(): self and result must have the same scalar type");
    check_no_internal_overlap(out);
    check_no_overlap(out, self);
    check_no_overlap(out, index);
  }
  DimVector result_size(self.sizes());
  if (self.dim() > 0) result_size[static_cast<size_t>(dim)] = numel;
  Tensor result = out;
  if (result.defined()) {
    resize_output(result, result_size);
  } else {
    result = empty(result_size, self.dtype(), self.device());
  }
  if (numel == 0) return result;
  if (self.dim() > 1 && self.numel() == 0) {
    const int64_t size = self.size(dim);
    KILN_CHECK_INDEX(size > 0, "index_select(): self indexing axis dim should be positive");
    const auto bad = offsets_along(self, dim, index, result_size, IndexWrap::NonNegative).bad;
    KILN_CHECK_INDEX(!bad, "index_select(): index ", bad ? bad->value : 0, " out of range for self tensor of size ",
                     self.sizes(), " at dimension ", dim);
    return result;
  }
  const Tensor self1 = at_least_1d(self);
  const Tensor result1 = at_least_1d(result);
  const Tensor src = along_dim(self1, dim, numel, 0);
  if (!out.defined()) {  // a fresh result: one pass (Note [Indexing by byte offsets])
    const Tensor index1 = at_least_1d(index);
    DimVector strides(static_cast<size_t>(result1.dim()), 0);
    strides[static_cast<size_t>(dim)] = index1.stride(0);
    const auto bad = run_gather_direct(result1, src, restride(index1, result1.sizes(), strides), index1,
                                       self1.size(dim), self1.stride(dim) * self1.itemsize(),
                                       IndexWrap::NonNegative, self.dtype())
                         .bad;
    KILN_CHECK_INDEX(!bad, "index out of range in self");
    return result;
  }
  const auto [offsets, bad] = offsets_along(self1, dim, index, result1.sizes(), IndexWrap::NonNegative);
  KILN_CHECK_INDEX(!bad, "index out of range in self");
  run_gather(result1, src, offsets, self.dtype());
  return result;
}

// --- index_add_ ---------------------------------------------------------------------------

void check_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  const int64_t numel = index.numel();
  KILN_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector, but got dim: ", index.dim(),
                   " with type: ", scalar_type_name(index.dtype()), " and size: ", index.sizes());
  KILN_CHECK(is_index_dtype(index.dtype()), "index_add_(): Expected dtype int32/int64 for index but got: ",
             scalar_type_name(index.dtype()));
  KILN_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", scalar_type_name(self.dtype()),
             ") and source (", scalar_type_name(source.dtype()), ") must have the same scalar type");
  KILN_CHECK(dim == 0 || dim < source.dim(), "index_add_(): Indexing dim ", dim,
             " is out of bounds of the source tensor with dim ", source.dim());
  const int64_t source_size = source.dim() == 0 ? 1 : source.size(dim);
  KILN_CHECK(numel == source_size, "index_add_(): Number of indices (", numel,
             ") should be equal to source.size(dim): (", source_size, "), for dim: ", dim);
  DimVector self_sizes(self.sizes());
  DimVector source_sizes(source.sizes());
  if (source.dim() != 0 && self.dim() != 0) {
    self_sizes.erase(static_cast<size_t>(dim));
    source_sizes.erase(static_cast<size_t>(dim));
  }
  KILN_CHECK(IntArrayRef(self_sizes).size() == IntArrayRef(source_sizes).size() &&
                 std::equal(self_sizes.begin(), self_sizes.end(), source_sizes.begin()),
             "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
             self.sizes(), " source.shape = ", source.sizes());
}

/// result (a copy of self, or self) += alpha * source at the indexed positions along dim.
void index_add_into(const Tensor& result, int64_t dim, const Tensor& index, const Tensor& source,
                    const Scalar& alpha) {
  if (index.numel() == 0 || result.numel() == 0) return;
  const Tensor result1 = at_least_1d(result);
  const Tensor source1 = at_least_1d(source);
  const auto [offsets, bad] = offsets_along(result1, dim, index, source1.sizes(), IndexWrap::NonNegative);
  if (bad) {
    KILN_CHECK_INDEX(result.dim() > 1, "index out of range in self");
    KILN_FAIL(Runtime, "index ", bad->value, " is out of bounds for dimension ", dim, " with size ",
              result1.size(dim));
  }
  run_put(along_dim(result1, dim, index.numel(), 0), source1, offsets, PutReduce::Add, alpha);
}

// --- index_fill_ --------------------------------------------------------------------------

Tensor fill_index_positions(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  KILN_CHECK_INDEX(index.dtype() == DType::Int64, "index_fill_(): Expected dtype int64 for index.");
  check_no_overlap(self, index);
  if (has_internal_overlap(self)) {
    KILN_WARN("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
              "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  const Tensor self1 = at_least_1d(self);
  dim = wrap_dim(dim, self1.dim());
  KILN_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  const Tensor fill = scalar_tensor(value, self.dtype());
  const int64_t numel = index.numel();
  if (numel == 0 || self.numel() == 0) return self;
  const Tensor dst = along_dim(self1, dim, numel, 0);
  const auto [offsets, bad] = offsets_along(self1, dim, index, dst.sizes(), IndexWrap::Negative);
  KILN_CHECK_INDEX(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension ", dim, " with size ",
                   self1.size(dim));
  run_put(dst, fill, offsets, PutReduce::Assign);
  self.impl()->bump_version();
  return self;
}

// --- take ---------------------------------------------------------------------------------

Tensor take_write(const Tensor& out, const Tensor& self, const Tensor& index) {
  KILN_CHECK(index.dtype() == DType::Int64, "take(): Expected a long tensor for index, but got ",
             scalar_type_name(index.dtype()));
  if (out.defined()) {
    KILN_CHECK(self.dtype() == out.dtype(), "take(): self and out expected to have the same dtype, but got self.dtype = ",
               scalar_type_name(self.dtype()), " and out.dtype = ", scalar_type_name(out.dtype()));
    check_no_internal_overlap(out);
    check_disjoint(out, index);
    check_disjoint(out, self);
  }
  KILN_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0), "take(): tried to take from an empty tensor");
  const Tensor flat = contiguous(self);
  const DimVector zeros(static_cast<size_t>(index.dim()), 0);
  const Tensor src = restride(flat, index.sizes(), zeros);
  auto fail = [&](const std::optional<BadIndex>& bad) {
    KILN_CHECK_INDEX(!bad, "out of range: tried to access index ", bad ? bad->value : 0, " on a tensor of ",
                     self.numel(), " elements.");
  };
  if (!out.defined()) {  // a fresh result: one pass (Note [Indexing by byte offsets])
    const Tensor result = empty(index.sizes(), self.dtype(), self.device());
    fail(run_gather_direct(result, src, index, index, self.numel(), self.itemsize(), IndexWrap::Negative,
                           self.dtype())
             .bad);
    return result;
  }
  Tensor offsets;
  fail(compute_offsets(offsets, index, self.numel(), self.itemsize(), IndexWrap::Negative));
  resize_output(out, index.sizes());
  if (index.numel() > 0) run_gather(out, src, offsets, self.dtype());
  return out;
}

}  // namespace

// The kernels indexing.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).
Tensor index_select_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  if (into == ResultInto::NewTensor) return index_select_write(Tensor(), self, dim, index);
  index_select_write(out, self, dim, index);
  out.impl()->bump_version();
  return out;
}

Tensor take_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& index) {
  if (into == ResultInto::NewTensor) return take_write(Tensor(), self, index);
  take_write(out, self, index);
  out.impl()->bump_version();
  return out;
}

namespace {

Tensor index_add_inplace(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
  dim = wrap_dim(dim, self.dim());
  check_index_add(self, dim, index, source);
  check_no_internal_overlap(self);
  check_no_overlap(self, index);
  check_no_overlap(self, source);
  index_add_into(self, dim, index, source, alpha);
  self.impl()->bump_version();
  return self;
}

Tensor index_add_functional(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                            const Scalar& alpha) {
  dim = wrap_dim(dim, self.dim());
  check_index_add(self, dim, index, source);
  const Tensor result = clone_contiguous(self);
  index_add_into(result, dim, index, source, alpha);
  return result;
}

Tensor index_add_to_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        const Scalar& alpha, const Tensor& out) {
  dim = wrap_dim(dim, self.dim());
  check_index_add(self, dim, index, source);
  prepare_out(out, self.sizes(), self.dtype());
  check_no_internal_overlap(out);
  check_no_overlap(out, index);
  check_no_overlap(out, source);
  if (!out.is_same(self)) kiln::copy_(out, self);
  index_add_into(out, dim, index, source, alpha);
  out.impl()->bump_version();
  return out;
}

}  // namespace

Tensor index_add_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor& source, const Scalar& alpha) {
  switch (into) {
    case ResultInto::NewTensor: return index_add_functional(self, dim, index, source, alpha);
    case ResultInto::InPlace: return index_add_inplace(self, dim, index, source, alpha);
    case ResultInto::Out: break;
  }
  return index_add_to_out(self, dim, index, source, alpha, out);
}

/// index_fill.int_Tensor reads its value through index_fill_value (tensor_as_scalar in ops.yaml).
Scalar index_fill_value(const Tensor& value) {
  KILN_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
  return value.impl()->is_meta() ? zero_of_item_kind(value.dtype()) : item(value);
}

Tensor index_fill_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                       const Scalar& value) {
  switch (into) {
    case ResultInto::InPlace: return fill_index_positions(self, dim, index, value);
    case ResultInto::NewTensor: return fill_index_positions(clone_preserving_strides(self), dim, index, value);
    case ResultInto::Out: break;
  }
  return copy_to_out(fill_index_positions(clone_preserving_strides(self), dim, index, value), out);
}

}  // namespace kiln::native
