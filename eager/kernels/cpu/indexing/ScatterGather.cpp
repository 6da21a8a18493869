// gather, scatter (src, value, reduce="add"/"multiply"), scatter_add,
// scatter_reduce (sum, prod, mean, amax, amin; include_self), and the
// composites built on them: take_along_dim and one_hot. Checks in PyTorch's
// order and words (ScatterGatherChecks.h, shared with CUDA); loops through
// Note [Indexing by byte offsets].
#include <algorithm>
#include <limits>
#include <optional>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/kernels/cpu/indexing/ScatterGatherChecks.h"
#include "eager/kernels/cpu/indexing/ScatterReduce.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

using namespace indexing;

namespace {

void gather_shape_check(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t dims = nonempty_dim(self);
  KILN_CHECK(dims == nonempty_dim(index), "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t i = 0; i < dims; ++i) {
    if (i == dim) continue;
    KILN_CHECK(nonempty_size(index, i) <= nonempty_size(self, i), "Size does not match at dimension ", i,
               " expected index ", index.sizes(), " to be no larger than self ", self.sizes(), " apart from dimension ",
               dim);
  }
}

/// `t` (at least 1-d) read with `sizes` and its own strides, stride 0 along `dim` when `zero_dim`.
Tensor window(const Tensor& t, IntArrayRef sizes, std::optional<int64_t> zero_dim) {
  DimVector strides(t.strides());
  if (zero_dim) strides[static_cast<size_t>(*zero_dim)] = 0;
  return restride(t, sizes, strides);
}

/// Byte offsets of `index` (at least 1-d) along `dim` of `t`; RuntimeError naming the first bad index.
Tensor checked_offsets(const Tensor& t, int64_t dim, const Tensor& index) {
  Tensor offsets;
  const int64_t size = t.size(dim);
  const auto bad = compute_offsets(offsets, index, size, t.stride(dim) * t.itemsize(), IndexWrap::NonNegative);
  KILN_CHECK(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension ", dim, " with size ", size);
  return offsets;
}

// --- gather ----------------------------------------------------------------------------

Tensor gather_write(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  Tensor result = out;
  if (result.defined()) {
    // torch's checks: no internal overlap and none with self before the resize (which an expanded
    // out could not take), no partial overlap with index after it (the out it grew into may meet it)
    check_no_internal_overlap(result);
    check_disjoint(result, self);
    prepare_out(result, index.sizes(), self.dtype());
    check_no_overlap(result, index);
  } else {
    result = empty(index.sizes(), self.dtype(), self.device());
  }
  if (index.numel() == 0) return result;
  check_index_dtype("gather", index);
  gather_shape_check(self, dim, index);
  const Tensor self1 = at_least_1d(self);
  const Tensor index1 = at_least_1d(index);
  const Tensor src = window(self1, index1.sizes(), dim);
  if (!out.defined()) {  // a fresh result: one pass (Note [Indexing by byte offsets])
    const int64_t size = self1.size(dim);
    const auto bad = run_gather_direct(at_least_1d(result), src, index1, index1, size,
                                       self1.stride(dim) * self1.itemsize(), IndexWrap::NonNegative, self.dtype())
                         .bad;
    KILN_CHECK(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension ", dim, " with size ", size);
    return result;
  }
  run_gather(at_least_1d(result), src, checked_offsets(self1, dim, index1), self.dtype());
  return result;
}

// --- scatter ---------------------------------------------------------------------------


/// Writes src (or `value`) into `target` at index along dim; `target` is self (in-place),
/// a fresh copy of self, or the out= tensor holding self's values.
void scatter_into(const Tensor& target, int64_t dim, const Tensor& index, const Tensor* src,
                  const std::optional<Scalar>& value, PutReduce reduce) {
  // The fill value is converted (and checked) before any index is.
  const Tensor values = src != nullptr ? Tensor() : scalar_tensor(*value, target.dtype());
  if (index.numel() == 0) return;
  const Tensor target1 = at_least_1d(target);
  const Tensor index1 = at_least_1d(index);
  const Tensor update = src != nullptr ? window(at_least_1d(*src), index1.sizes(), std::nullopt) : values;
  const int64_t size = target1.size(dim);
  const auto bad = run_put_direct(window(target1, index1.sizes(), dim), update, index1, index1, size,
                                  target1.stride(dim) * target1.itemsize(), reduce);
  KILN_CHECK(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension ", dim, " with size ", size);
  target.impl()->bump_version();
}

struct ScatterArgs {
  const Tensor* src = nullptr;
  std::optional<Scalar> value;
  std::optional<std::string_view> reduce;
};

Tensor scatter_inplace(const Tensor& self, int64_t dim, const Tensor& index, const ScatterArgs& a) {
  dim = wrap_dim(dim, self.dim());
  check_scatter(self, dim, index, a.src, a.reduce);
  check_no_internal_overlap(self);
  check_no_overlap(self, index);
  if (a.src != nullptr) check_no_overlap(self, *a.src);
  const PutReduce reduce = a.reduce ? reduce_from_name(*a.reduce) : PutReduce::Assign;
  scatter_into(self, dim, index, a.src, a.value, reduce);
  return self;
}

Tensor scatter_functional(const Tensor& self, int64_t dim, const Tensor& index, const ScatterArgs& a) {
  dim = wrap_dim(dim, self.dim());
  check_scatter(self, dim, index, a.src, a.reduce);
  const PutReduce reduce = a.reduce ? reduce_from_name(*a.reduce) : PutReduce::Assign;
  const Tensor result = clone_contiguous(self);
  scatter_into(result, dim, index, a.src, a.value, reduce);
  return result;
}

Tensor scatter_out(const Tensor& self, int64_t dim, const Tensor& index, const ScatterArgs& a, const Tensor& out) {
  dim = wrap_dim(dim, self.dim());
  check_scatter(self, dim, index, a.src, a.reduce);
  check_no_internal_overlap(out);
  check_no_overlap(out, index);
  if (a.src != nullptr) check_no_overlap(out, *a.src);
  prepare_out(out, self.sizes(), self.dtype());
  const PutReduce reduce = a.reduce ? reduce_from_name(*a.reduce) : PutReduce::Assign;
  if (!out.is_same(self)) kiln::copy_(out, self);
  scatter_into(out, dim, index, a.src, a.value, reduce);
  return out;
}

void warn_reduce_with_src() {
  static bool warned = false;
  if (warned) return;
  warned = true;
  KILN_WARN("The reduce argument of kiln.scatter with Tensor src is deprecated and will be removed in a future "
            "release. Use kiln.scatter_reduce instead for more reduction options.");
}

// --- scatter_reduce ----------------------------------------------------------------------

/// scatter_reduce's steps (Note [scatter_reduce on any device]) with the CPU's puts.
void scatter_reduce_on_cpu(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce, bool include_self) {
  static const ScatterReducePuts cpu_puts{
      [](const Tensor& t, int64_t d, const Tensor& i, const Tensor* s, const std::optional<Scalar>& v, PutReduce r) {
        scatter_into(t, d, i, s, v, r);
      },
      [](const Tensor& t, const Tensor& counts) {
        const Tensor divisor = kiln::clamp_min(counts, Scalar(int64_t{1}));
        const bool exact = is_floating_point(t.dtype()) || is_complex(t.dtype());
        kiln::copy_(t, exact ? kiln::div(t, divisor) : kiln::div(t, divisor, "floor"));
      }};
  indexing::scatter_reduce_into(target, dim, index, src, reduce, include_self, cpu_puts, "cpu");
}

/// scatter's three forms over one set of arguments.
Tensor scatter_with(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                    const ScatterArgs& a) {
  switch (into) {
    case ResultInto::NewTensor: return scatter_functional(self, dim, index, a);
    case ResultInto::InPlace: return scatter_inplace(self, dim, index, a);
    case ResultInto::Out: break;
  }
  return scatter_out(self, dim, index, a, out);
}

}  // namespace

// --- scatter and scatter_add: the kernels indexing.yaml's kernel_into names -------------------
// (Note [Generated entry points], tools/opgen/into.py)

Tensor scatter_src_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& src) {
  return scatter_with(into, out, self, dim, index, ScatterArgs{&src, std::nullopt, std::nullopt});
}
Tensor scatter_value_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                          const Scalar& value) {
  return scatter_with(into, out, self, dim, index, ScatterArgs{nullptr, value, std::nullopt});
}
Tensor scatter_src_reduce_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim,
                               const Tensor& index, const Tensor& src, std::string_view reduce) {
  warn_reduce_with_src();
  return scatter_with(into, out, self, dim, index, ScatterArgs{&src, std::nullopt, reduce});
}
Tensor scatter_value_reduce_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim,
                                 const Tensor& index, const Scalar& value, std::string_view reduce) {
  return scatter_with(into, out, self, dim, index, ScatterArgs{nullptr, value, reduce});
}
Tensor scatter_add_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& src) {
  return scatter_with(into, out, self, dim, index, ScatterArgs{&src, std::nullopt, "add"});
}

// --- gather, scatter_reduce ------------------------------------------------------------------

Tensor gather_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                   bool /*sparse_grad*/) {
  if (into == ResultInto::NewTensor) return gather_write(Tensor(), self, dim, index);
  gather_write(out, self, dim, index);
  out.impl()->bump_version();
  return out;
}

namespace {

Tensor scatter_reduce_two_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self, const Tensor& out) {
  dim = wrap_dim(dim, self.dim());
  check_scatter_reduce(self, dim, index, src, reduce);
  check_no_internal_overlap(out);
  check_no_overlap(out, index);
  check_no_overlap(out, src);
  prepare_out(out, self.sizes(), self.dtype());
  if (!out.is_same(self)) kiln::copy_(out, self);
  scatter_reduce_on_cpu(out, dim, index, src, reduce, include_self);
  return out;
}

}  // namespace

Tensor scatter_reduce_two_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t dim,
                               const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self) {
  if (into == ResultInto::Out) return scatter_reduce_two_out(self, dim, index, src, reduce, include_self, out);
  dim = wrap_dim(dim, self.dim());
  check_scatter_reduce(self, dim, index, src, reduce);
  const Tensor result = clone_contiguous(self);
  scatter_reduce_on_cpu(result, dim, index, src, reduce, include_self);
  return result;
}

// --- composites ----------------------------------------------------------------------------

namespace {

/// take_along_dim's broadcast operands: self and indices share every size but dim's,
/// and the indices are wrapped modulo the size of dim (PyTorch 2.13's eager rule).
std::pair<Tensor, Tensor> take_along_dim_operands(const Tensor& self, const Tensor& indices, int64_t& dim) {
  KILN_CHECK(self.dim() == indices.dim(), "kiln.take_along_dim(): input and indices should have the same number of "
             "dimensions, but got ", self.dim(), " dimensions for input, and ", indices.dim(),
             " dimensions for indices");
  KILN_CHECK(indices.dtype() == DType::Int64, "kiln.take_along_dim(): dtype of indices should be Long but got ",
             scalar_type_name(indices.dtype()));
  dim = wrap_dim(dim, self.dim());
  DimVector self_sizes(self.sizes());
  if (self.dim() > 0) self_sizes[static_cast<size_t>(dim)] = indices.size(dim);
  const DimVector indices_shape = broadcast_shapes(self_sizes, indices.sizes());
  DimVector indices_sizes(indices.sizes());
  if (indices.dim() > 0) indices_sizes[static_cast<size_t>(dim)] = self.size(dim);
  const DimVector self_shape = broadcast_shapes(indices_sizes, self.sizes());
  // Through the dispatcher so autograd sees it (an expand, once the shape ops have one).
  Tensor self_b = self;
  if (!std::equal(self_shape.begin(), self_shape.end(), self.sizes().begin(), self.sizes().end())) {
    self_b = kiln::as_strided(self, self_shape, expand_to(self, self_shape).strides(), self.storage_offset());
  }
  Tensor wrapped = expand_to(indices, indices_shape);
  const int64_t size = self_b.dim() == 0 ? 1 : self_b.size(dim);
  if (wrapped.numel() > 0) {
    KILN_CHECK(size != 0, "ZeroDivisionError");
    Tensor offsets;
    (void)compute_offsets(offsets, wrapped, size, /*stride_bytes=*/1, IndexWrap::Modular);
    wrapped = offsets;
  }
  return {self_b, wrapped};
}

}  // namespace

Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  if (!dim) return kiln::gather(self.view(IntArrayRef{-1}), 0, indices.view(IntArrayRef{-1}));
  int64_t d = *dim;
  const auto [self_b, wrapped] = take_along_dim_operands(self, indices, d);
  return kiln::gather(self_b, d, wrapped);
}

Tensor take_along_dim_out(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim, const Tensor& out) {
  if (!dim) return kiln::gather_out(out, self.view(IntArrayRef{-1}), 0, indices.view(IntArrayRef{-1}));
  int64_t d = *dim;
  const auto [self_b, wrapped] = take_along_dim_operands(self, indices, d);
  return kiln::gather_out(out, self_b, d, wrapped);
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  KILN_CHECK(self.dtype() == DType::Int64, "one_hot is only applicable to index tensor of type LongTensor.");
  DimVector shape(self.sizes());
  if (self.numel() == 0) {
    KILN_CHECK(num_classes > 0, "Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return empty(shape, DType::Int64, self.device());
  }
  if (self.impl()->is_meta()) {  // the checks above, and num_classes, are the meta function
    KILN_CHECK_NOT_IMPLEMENTED(num_classes != -1, "kiln::one_hot: attempted to run this operator with Meta tensors and "
                               "num_classes=-1, but then its output's shape depends on the input's data "
                               "(dynamic_output_shape); pass num_classes");
    shape.push_back(num_classes);
    return empty(shape, DType::Int64, self.device());
  }
  const Tensor values = contiguous(self);
  const int64_t* data = values.data_ptr<int64_t>();
  const auto [lo, hi] = std::minmax_element(data, data + values.numel());
  KILN_CHECK(*lo >= 0, "Class values must be non-negative.");
  if (num_classes == -1) {
    num_classes = *hi + 1;
  } else {
    KILN_CHECK(*hi < num_classes, "Class values must be smaller than num_classes.");
  }
  shape.push_back(num_classes);
  const Tensor result = zeros(shape, DType::Int64, self.device());
  DimVector index_sizes(self.sizes());
  DimVector index_strides(values.strides());
  index_sizes.push_back(1);
  index_strides.push_back(1);
  const Tensor index = restride(values, index_sizes, index_strides);
  scatter_into(result, result.dim() - 1, index, nullptr, Scalar(int64_t{1}), PutReduce::Assign);
  return result;
}

}  // namespace kiln::native
