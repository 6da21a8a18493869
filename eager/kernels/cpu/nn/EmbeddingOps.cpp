// embedding (a row gather) and its dense backward (rows accumulated in index
// order, padding_idx skipped). Every index is checked before a row is read.
#include <cstring>
#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/VisitFloating.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// The indices as int64, each checked against [0, rows).
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t rows) {
  KILN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
             legacy_tensor_name(indices.dtype()), " instead (while checking arguments for embedding)");
  const Tensor t = contiguous_values(indices);
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = t.dtype() == DType::Int64 ? t.data_ptr<int64_t>()[i] : t.data_ptr<int32_t>()[i];
    KILN_CHECK_INDEX(v >= 0 && v < rows, "index out of range in self");
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}

}  // namespace

Tensor embedding_cpu(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/, bool /*scale_grad_by_freq*/,
                     bool /*sparse*/) {
  KILN_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  const std::vector<int64_t> idx = checked_indices(indices, weight.size(0));
  const Tensor w = contiguous_values(weight);
  const int64_t d = weight.size(1);
  DimVector shape(indices.sizes());
  shape.push_back(d);
  Tensor out = empty(shape, weight.dtype());
  const int64_t row_bytes = d * weight.itemsize();
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const int64_t n = static_cast<int64_t>(idx.size());
  parallel_for(0, n, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(d, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      std::memcpy(dst + i * row_bytes, src + idx[static_cast<size_t>(i)] * row_bytes, static_cast<size_t>(row_bytes));
    }
  });
  return out;
}

Tensor embedding_dense_backward_cpu(const Tensor& grad_output, const Tensor& indices, IntArrayRef weight_sizes,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  KILN_CHECK(weight_sizes.size() == 2, "_embedding_dense_backward: weight_sizes must have 2 elements");
  const int64_t rows = weight_sizes[0], d = weight_sizes[1];
  const std::vector<int64_t> idx = checked_indices(indices, rows);
  KILN_CHECK(grad_output.numel() == static_cast<int64_t>(idx.size()) * d, "embedding_backward: grad_output of shape ",
             grad_output.sizes(), " does not match indices of shape ", indices.sizes(), " and embedding dim ", d);
  const Tensor g = contiguous_values(grad_output);
  Tensor grad_weight = zeros(weight_sizes, grad_output.dtype());
  std::vector<int64_t> counts;
  if (scale_grad_by_freq) {
    counts.assign(static_cast<size_t>(rows), 0);
    for (int64_t v : idx) ++counts[static_cast<size_t>(v)];
  }
  visit_floating_dtype(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* gp = g.data_ptr<T>();
    T* wp = grad_weight.data_ptr<T>();
    // Duplicate indices accumulate in index order; float16/bfloat16 sums are kept in float.
    std::vector<A> widened;
    if constexpr (!std::is_same_v<A, T>) widened.assign(static_cast<size_t>(rows * d), A(0));
    A* acc = nullptr;
    if constexpr (std::is_same_v<A, T>) {
      acc = wp;
    } else {
      acc = widened.data();
    }
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t r = idx[i];
      if (r == padding_idx) continue;
      const A scale = scale_grad_by_freq ? A(1) / static_cast<A>(counts[static_cast<size_t>(r)]) : A(1);
      for (int64_t j = 0; j < d; ++j) acc[r * d + j] += static_cast<A>(gp[i * d + j]) * scale;
    }
    if constexpr (!std::is_same_v<A, T>) {
      for (int64_t k = 0; k < rows * d; ++k) wp[k] = static_cast<T>(acc[k]);
    }
  });
  return grad_weight;
}

}  // namespace kiln::native
