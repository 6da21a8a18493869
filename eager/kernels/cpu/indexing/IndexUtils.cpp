// Shared indexing helpers. See Note [Indexing by byte offsets] in IndexUtils.h.
#include "eager/kernels/cpu/indexing/IndexUtils.h"

#include <algorithm>
#include <numeric>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(index_offsets_fn, index_offsets_stub);
KILN_DEFINE_DISPATCH(index_gather_fn, index_gather_stub);
KILN_DEFINE_DISPATCH(index_gather_direct_fn, index_gather_direct_stub);
KILN_DEFINE_DISPATCH(index_put_direct_fn, index_put_direct_stub);
KILN_DEFINE_DISPATCH(index_put_fn, index_put_stub);
KILN_DEFINE_DISPATCH(nonzero_count_fn, nonzero_count_stub);
KILN_DEFINE_DISPATCH(nonzero_fill_fn, nonzero_fill_stub);
KILN_DEFINE_DISPATCH(searchsorted_fn, searchsorted_stub);

namespace indexing {

Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return as_strided_impl(t, sizes, strides, t.storage_offset());
}

bool is_expandable_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

void check_expandable(const Tensor& t, IntArrayRef shape) {
  const int64_t ndim = t.dim();
  const int64_t target = static_cast<int64_t>(shape.size());
  KILN_CHECK(target >= ndim, "expand(CPU", scalar_type_name(t.dtype()), "Type{", t.sizes(), "}, size=", shape,
             "): the number of sizes provided (", target,
             ") must be greater or equal to the number of dimensions in the tensor (", ndim, ")");
  for (int64_t i = target - 1; i >= 0; --i) {
    const int64_t d = i - (target - ndim);
    if (d < 0) break;
    const int64_t size = t.size(d);
    KILN_CHECK(size == 1 || size == shape[static_cast<size_t>(i)], "The expanded size of the tensor (",
               shape[static_cast<size_t>(i)], ") must match the existing size (", size,
               ") at non-singleton dimension ", i, ".  Target sizes: ", shape, ".  Tensor sizes: ", t.sizes());
  }
}

Tensor expand_to(const Tensor& t, IntArrayRef shape) {
  if (t.sizes().size() == shape.size() && std::equal(shape.begin(), shape.end(), t.sizes().begin())) return t;
  DimVector strides(shape.size(), 0);
  const size_t lead = shape.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    strides[lead + i] = t.size(static_cast<int64_t>(i)) == 1 ? 0 : t.stride(static_cast<int64_t>(i));
  }
  return restride(t, shape, strides);
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone_contiguous(t); }

Tensor clone_contiguous(const Tensor& t) {
  Tensor out = empty(t.sizes(), t.dtype(), t.device());
  kiln::copy_(out, t);
  return out;
}

namespace {

/// PyTorch's is_non_overlapping_and_dense: the elements tile a block of memory in some dim order.
bool is_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  const int64_t n = t.dim();
  DimVector perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (t.size(a) < 2) return false;
    if (t.size(b) < 2) return true;
    return t.stride(a) < t.stride(b);
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

}  // namespace

Tensor clone_preserving_strides(const Tensor& t) {
  if (!is_dense(t) || t.is_contiguous()) return clone_contiguous(t);
  Tensor out = empty_strided(t.sizes(), t.strides(), t.dtype(), t.device());
  kiln::copy_(out, t);
  return out;
}

Scalar item(const Tensor& t) {
  KILN_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  return visit_dtype_and_complex(t.dtype(), [&](auto tag) -> Scalar {
    using T = decltype(tag);
    const T v = *t.data_ptr<T>();
    if constexpr (std::is_same_v<T, bool> || is_complex_v<T>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(v));
    } else {
      return Scalar(static_cast<double>(static_cast<float>(v)));
    }
  });
}

Tensor scalar_tensor(const Scalar& value, DType dtype) { return full(IntArrayRef{}, value, dtype); }

bool has_internal_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  }
  return false;
}

void check_no_internal_overlap(const Tensor& t) {
  KILN_CHECK(!has_internal_overlap(t),
             "unsupported operation: more than one element of the written-to tensor refers to a single memory "
             "location. Please clone() the tensor before performing the operation.");
}

void check_no_overlap(const Tensor& written, const Tensor& read) {
  if (written.numel() == 0 || read.numel() == 0 || written.storage() != read.storage()) return;
  if (same_view(written, read)) return;
  KILN_CHECK(!byte_spans_meet(written, read),
             "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
             "memory location. Please clone() the tensor before performing the operation.");
}

void check_disjoint(const Tensor& written, const Tensor& read) {
  if (written.numel() == 0 || read.numel() == 0 || written.storage() != read.storage()) return;
  KILN_CHECK(!byte_spans_meet(written, read),
             "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
             "memory location. Please clone() the tensor before performing the operation.");
}

void prepare_out(const Tensor& out, IntArrayRef shape, DType dtype) {
  KILN_CHECK(out.dtype() == dtype, "Expected out tensor to have dtype ", cpp_type_name(dtype), ", but got ",
             cpp_type_name(out.dtype()), " instead");
  resize_output(out, shape);
}

namespace {

/// The first index outside its dim, scanning `index` in row-major order (the error path only).
std::optional<BadIndex> first_bad_index(const Tensor& index, int64_t size, IndexWrap wrap) {
  const Tensor c = contiguous(index);
  const int64_t n = c.numel();
  auto bad = [&](int64_t v) { return wrap == IndexWrap::Negative ? (v < -size || v >= size) : (v < 0 || v >= size); };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = c.dtype() == DType::Int32 ? c.data_ptr<int32_t>()[i] : c.data_ptr<int64_t>()[i];
    if (bad(v)) return BadIndex{v};
  }
  return std::nullopt;
}

}  // namespace

std::optional<BadIndex> compute_offsets(Tensor& offsets, const Tensor& index, int64_t size, int64_t stride_bytes,
                                        IndexWrap wrap, bool accumulate) {
  KILN_INTERNAL_ASSERT(index.dtype() == DType::Int64 || index.dtype() == DType::Int32);
  TensorIteratorConfig config;
  config.set_op_name("index").check_all_same_dtype(false).resize_outputs(false);
  if (accumulate) {
    config.add_output(offsets).add_const_input(offsets);
  } else {
    config.add_output(offsets).declare_static_dtype(DType::Int64);
  }
  config.add_const_input(index);
  TensorIterator iter = config.build();
  if (!accumulate) offsets = iter.output();
  if (iter.numel() == 0) return std::nullopt;
  if (index_offsets_stub(iter, size, stride_bytes, wrap)) return std::nullopt;
  auto bad = first_bad_index(index, size, wrap);
  KILN_INTERNAL_ASSERT(bad.has_value());
  return bad;
}

Tensor run_gather(const Tensor& out, const Tensor& src_restrided, const Tensor& offsets_restrided, DType dtype) {
  TensorIterator iter = TensorIteratorConfig()
                            .set_op_name("index")
                            .add_output(out)
                            .add_const_input(src_restrided)
                            .add_const_input(offsets_restrided)
                            .declare_static_dtype(dtype)
                            .resize_outputs(false)
                            .build();
  index_gather_stub(iter);
  return iter.output();
}

DirectGather run_gather_direct(const Tensor& out, const Tensor& src_restrided, const Tensor& index_restrided,
                               const Tensor& index, int64_t size, int64_t stride_bytes, IndexWrap wrap, DType dtype) {
  KILN_INTERNAL_ASSERT(index.dtype() == DType::Int64 || index.dtype() == DType::Int32);
  TensorIterator iter = TensorIteratorConfig()
                            .set_op_name("index")
                            .add_output(out)
                            .add_const_input(src_restrided)
                            .add_const_input(index_restrided)
                            .declare_static_dtype(dtype)
                            .resize_outputs(false)
                            .build();
  if (iter.numel() == 0 || index_gather_direct_stub(iter, size, stride_bytes, wrap)) return {iter.output(), std::nullopt};
  auto bad = first_bad_index(index, size, wrap);
  KILN_INTERNAL_ASSERT(bad.has_value());
  return {Tensor(), bad};
}

void run_put(const Tensor& dst_restrided, const Tensor& values, const Tensor& offsets_restrided, PutReduce reduce,
             const Scalar& alpha) {
  TensorIterator iter = TensorIteratorConfig()
                            .set_op_name("index_put_")
                            .add_const_input(dst_restrided)
                            .add_const_input(values)
                            .add_const_input(offsets_restrided)
                            .check_all_same_dtype(false)
                            .build();
  index_put_stub(iter, reduce, alpha);
}

std::optional<BadIndex> run_put_direct(const Tensor& dst_restrided, const Tensor& values,
                                       const Tensor& index_restrided, const Tensor& index, int64_t size,
                                       int64_t stride_bytes, PutReduce reduce, const Scalar& alpha) {
  KILN_INTERNAL_ASSERT(index.dtype() == DType::Int64 || index.dtype() == DType::Int32);
  TensorIterator iter = TensorIteratorConfig()
                            .set_op_name("index_put_")
                            .add_const_input(dst_restrided)
                            .add_const_input(values)
                            .add_const_input(index_restrided)
                            .check_all_same_dtype(false)
                            .build();
  if (iter.numel() == 0 || index_put_direct_stub(iter, size, stride_bytes, reduce, alpha)) return std::nullopt;
  auto bad = first_bad_index(index, size, IndexWrap::NonNegative);
  KILN_INTERNAL_ASSERT(bad.has_value());
  return bad;
}

Tensor at_least_1d(const Tensor& t) {
  if (t.dim() > 0) return t;
  return restride(t, IntArrayRef{1}, IntArrayRef{1});
}

}  // namespace indexing
}  // namespace kiln::native
