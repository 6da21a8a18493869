// repeat (tile the whole tensor) and repeat_interleave (repeat each element or
// slice along a dim). repeat is one layout copy from a broadcast view of self;
// repeat_interleave copies blocks (per_capability/RepeatKernel.cpp).
#include "eager/kernels/cpu/shape/Repeat.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(interleave_blocks_fn, interleave_blocks_stub);

namespace {

/// Validated repeat counts with their exclusive prefix sums.
struct RepeatCounts {
  std::vector<int64_t> repeats;
  std::vector<int64_t> offsets;
  int64_t total = 0;
};

/// PyTorch's repeat_interleave_cpu checks, in its order and words.
RepeatCounts read_counts(const Tensor& repeats, std::optional<int64_t> output_size) {
  KILN_CHECK_NOT_IMPLEMENTED(repeats.dtype() == DType::Int32 || repeats.dtype() == DType::Int64,
                             "\"repeat_interleave_cpu\" not implemented for '", scalar_type_name(repeats.dtype()),
                             "'");
  KILN_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  RepeatCounts counts;
  const int64_t n = repeats.sizes()[0];
  if (n == 0) return counts;
  counts.repeats.resize(static_cast<size_t>(n));
  visit_dtype(repeats.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const T* data = repeats.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) counts.repeats[static_cast<size_t>(i)] = data[i * repeats.strides()[0]];
    }
  });
  counts.offsets.resize(static_cast<size_t>(n));
  int64_t sum = 0;
  bool negative = false;
  for (size_t i = 0; i < counts.repeats.size(); ++i) {
    counts.offsets[i] = sum;
    sum += counts.repeats[i];
    negative = negative || counts.repeats[i] < 0;
  }
  if (output_size) {
    KILN_CHECK(*output_size >= 0, "Trying to create tensor with negative dimension ", *output_size, ": [",
               *output_size, "]");
    KILN_CHECK(*output_size == sum, "allocated size does not match required size");
  }
  KILN_CHECK(!negative, "repeats can not be negative");
  counts.total = sum;
  return counts;
}

/// input with slice i along `dim` repeated counts.repeats[i] times.
Tensor interleave(const Tensor& input, int64_t dim, const RepeatCounts& counts) {
  DimVector sizes(input.sizes());
  sizes[dim] = counts.total;
  Tensor result = empty(sizes, input.dtype(), input.device());
  if (result.numel() == 0 || result.impl()->is_meta()) return result;  // meta: the callers' checks
  const Tensor src = contiguous_values(input);
  InterleavePlan plan;
  plan.dst = static_cast<char*>(result.data_ptr());
  plan.src = static_cast<const char*>(src.data_ptr());
  plan.itemsize = src.itemsize();
  plan.outer = product(src.sizes().subspan(0, static_cast<size_t>(dim)));
  plan.n = src.sizes()[dim];
  plan.inner = product(src.sizes().subspan(static_cast<size_t>(dim) + 1));
  plan.total = counts.total;
  plan.repeats = counts.repeats.data();
  plan.offsets = counts.offsets.data();
  const int64_t written_per_block = std::max<int64_t>(counts.total * plan.inner / std::max<int64_t>(plan.n, 1), 1);
  const int64_t grain = std::max<int64_t>(kGrainSize / written_per_block, 1);
  parallel_for(0, plan.outer * plan.n, grain,
               [&](int64_t begin, int64_t end) { interleave_blocks_stub(plan, begin, end); });
  return result;
}

}  // namespace

Tensor repeat_cpu(const Tensor& self, IntArrayRef repeats) {
  KILN_CHECK(repeats.size() >= static_cast<size_t>(self.dim()),
             "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const size_t n = repeats.size();
  const size_t new_dims = n - static_cast<size_t>(self.dim());
  DimVector target(n);
  DimVector padded(n, 1);
  DimVector padded_strides(n, 0);
  for (size_t i = new_dims; i < n; ++i) {
    padded[i] = self.sizes()[i - new_dims];
    padded_strides[i] = self.strides()[i - new_dims];
  }
  for (size_t i = 0; i < n; ++i) target[i] = padded[i] * repeats[i];
  Tensor result = empty(target, self.dtype(), self.device());
  if (result.numel() == 0 || result.impl()->is_meta()) return result;  // the checks above are the meta function
  // The result read as (r0, s0, r1, s1, ...): each (r, s) pair of dims takes
  // its elements from self's dim (stride 0 along r).
  const DimVector out_strides = contiguous_strides(target);
  DimVector sizes, dst_strides, src_strides;
  for (size_t i = 0; i < n; ++i) {
    sizes.push_back(repeats[i]);
    dst_strides.push_back(padded[i] * out_strides[i]);
    src_strides.push_back(0);
    sizes.push_back(padded[i]);
    dst_strides.push_back(out_strides[i]);
    src_strides.push_back(padded_strides[i]);
  }
  copy_strided(static_cast<char*>(result.data_ptr()), dst_strides, static_cast<const char*>(self.data_ptr()),
               src_strides, sizes, self.itemsize());
  return result;
}

Tensor repeat_interleave_cpu(const Tensor& repeats, std::optional<int64_t> output_size) {
  const RepeatCounts counts = read_counts(repeats, output_size);
  Tensor result = empty({counts.total}, repeats.dtype(), repeats.device());
  visit_dtype(repeats.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      T* out = result.data_ptr<T>();
      for (size_t i = 0; i < counts.repeats.size(); ++i) {
        std::fill(out + counts.offsets[i], out + counts.offsets[i] + counts.repeats[i], static_cast<T>(i));
      }
    }
  });
  return result;
}

Tensor repeat_interleave_self_tensor_cpu(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                                         std::optional<int64_t> output_size) {
  const Tensor input = dim ? self : kiln::flatten(self);
  const int64_t d = dim.value_or(0);
  Tensor per_slice = repeats;
  if (repeats.dim() == 0 || (repeats.dim() == 1 && repeats.sizes()[0] == 1)) {
    per_slice = kiln::reshape(repeats, {1}).expand({input.size(d)});
  } else if (repeats.dim() == 1) {
    KILN_CHECK(repeats.sizes()[0] == input.size(d),
               "repeats must have the same size as input along dim, but got repeats.size(0) = ", repeats.sizes()[0],
               " and input.size(", d, ") = ", input.size(d));
  } else {
    KILN_FAIL(Runtime, "repeats must be 0-dim or 1-dim tensor");
  }
  const RepeatCounts counts = read_counts(per_slice, output_size);
  return interleave(input, wrap_dim(d, input.dim()), counts);
}

Tensor repeat_interleave_self_int_cpu(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                                      std::optional<int64_t> output_size) {
  const Tensor input = dim ? self : kiln::flatten(self);
  const int64_t d = wrap_dim(dim.value_or(0), self.dim());
  KILN_CHECK(repeats >= 0, "Repeats must be non-negative");
  (void)wrap_dim(d + 1, input.dim() + 1);  // PyTorch unsqueezes at d + 1: its IndexError for a 0-dim input
  const int64_t n = input.sizes()[d];
  const int64_t total = repeats * n;
  if (output_size) {
    KILN_CHECK(*output_size == total, "repeat_interleave: Invalid output_size, expected ", total, " but got ",
               *output_size);
  }
  RepeatCounts counts;
  counts.repeats.assign(static_cast<size_t>(n), repeats);
  counts.offsets.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) counts.offsets[static_cast<size_t>(i)] = i * repeats;
  counts.total = total;
  return interleave(input, d, counts);
}

}  // namespace kiln::native
