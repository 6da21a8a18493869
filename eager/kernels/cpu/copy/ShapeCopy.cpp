// Layout copies: planning, parallel split, and the layouts PyTorch gives new
// tensors. See Note [Layout copies] in ShapeCopy.h.
#include "eager/kernels/cpu/copy/ShapeCopy.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(strided_copy_rows_fn, strided_copy_rows_stub);
KILN_DEFINE_DISPATCH(concat_rows_fn, concat_rows_stub);

namespace {

/// Bytes below which splitting a copy across threads costs more than it saves.
constexpr int64_t kCopyGrainBytes = int64_t{1} << 17;  // 128 KiB

int64_t rows_of(const StridedCopyPlan& plan) {
  if (!plan.tiled) return plan.outer_count();
  const int64_t bands = (plan.sizes[plan.ndim - 2] + kTransposeTile - 1) / kTransposeTile;
  return plan.outer_count() * bands;
}

int64_t row_bytes(const StridedCopyPlan& plan) {
  const int64_t elements = plan.tiled ? kTransposeTile * plan.inner_size() : plan.inner_size();
  return elements * plan.itemsize;
}

}  // namespace

StridedCopyPlan plan_strided_copy(char* dst, IntArrayRef dst_strides, const char* src, IntArrayRef src_strides,
                                  IntArrayRef sizes, int64_t itemsize) {
  StridedCopyPlan plan;
  plan.dst = dst;
  plan.src = src;
  plan.itemsize = itemsize;
  // Dims of size 1 move nothing; order the rest so the destination is written in
  // memory order (largest destination stride outermost; stable for ties).
  DimVector dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) dims.push_back(static_cast<int64_t>(d));
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int64_t a, int64_t b) { return std::abs(dst_strides[a]) > std::abs(dst_strides[b]); });
  int n = 0;
  for (int64_t d : dims) {
    const int64_t size = sizes[d];
    const int64_t ds = dst_strides[d] * itemsize;
    const int64_t ss = src_strides[d] * itemsize;
    // Merge into the previous (outer) dim when both sides continue densely.
    if (n > 0 && plan.dst_strides[n - 1] == ds * size && plan.src_strides[n - 1] == ss * size) {
      plan.sizes[n - 1] *= size;
      plan.dst_strides[n - 1] = ds;
      plan.src_strides[n - 1] = ss;
      continue;
    }
    KILN_CHECK(n < StridedCopyPlan::kMaxCopyDims, "copy: tensors with more than ", StridedCopyPlan::kMaxCopyDims,
               " non-mergeable dims are not supported");
    plan.sizes[n] = size;
    plan.dst_strides[n] = ds;
    plan.src_strides[n] = ss;
    ++n;
  }
  if (n == 0) {  // one element
    plan.sizes[0] = 1;
    plan.dst_strides[0] = plan.src_strides[0] = itemsize;
    n = 1;
  }
  plan.ndim = n;
  int64_t elements = 1;
  for (int d = 0; d < n; ++d) elements *= plan.sizes[d];
  plan.streaming = elements * itemsize >= kStreamingBytes;
  if (plan.streaming) {
    // An outer dim the source walks backwards (flip(0)) is walked the other way round:
    // the same element pairs, but the source read forwards, as the prefetchers like,
    // and the destination's rows, streamed past the cache, written in falling order
    // (flip(0) of 2048x2048 float32: 0.72 -> 0.47 ms, torch 0.59-0.69).
    for (int d = 0; d + 1 < n; ++d) {
      if (plan.src_strides[d] >= 0) continue;
      plan.dst += (plan.sizes[d] - 1) * plan.dst_strides[d];
      plan.src += (plan.sizes[d] - 1) * plan.src_strides[d];
      plan.dst_strides[d] = -plan.dst_strides[d];
      plan.src_strides[d] = -plan.src_strides[d];
    }
  }
  // Tiles are for the 1/2/4/8-byte element loops; wider elements (complex128) copy element by element.
  plan.tiled = itemsize <= 8 && n >= 2 && plan.dst_strides[n - 1] == itemsize && plan.src_strides[n - 1] != itemsize &&
               plan.src_strides[n - 2] == itemsize && plan.dst_strides[n - 2] != 0 &&
               plan.sizes[n - 1] >= kTransposeTile && plan.sizes[n - 2] >= kTransposeTile;
  return plan;
}

void run_strided_copy(const StridedCopyPlan& plan) {
  const int64_t rows = rows_of(plan);
  const int64_t bytes_per_row = std::max<int64_t>(row_bytes(plan), 1);
  if (rows == 1 && !plan.tiled && plan.ndim == 1) {
    // One long row: split it into pieces of at least the grain.
    const int64_t grain = std::max<int64_t>(kCopyGrainBytes / plan.itemsize, 1);
    parallel_for(0, plan.sizes[0], grain, [&](int64_t begin, int64_t end) {
      StridedCopyPlan piece = plan;
      piece.dst = plan.dst + begin * plan.dst_strides[0];
      piece.src = plan.src + begin * plan.src_strides[0];
      piece.sizes[0] = end - begin;
      strided_copy_rows_stub(piece, 0, 1);
    });
    return;
  }
  const int64_t grain_rows = std::max<int64_t>(kCopyGrainBytes / bytes_per_row, 1);
  parallel_for(0, rows, grain_rows, [&](int64_t begin, int64_t end) { strided_copy_rows_stub(plan, begin, end); });
}

void copy_strided(char* dst, IntArrayRef dst_strides, const char* src, IntArrayRef src_strides, IntArrayRef sizes,
                  int64_t itemsize) {
  if (product(sizes) == 0) return;
  run_strided_copy(plan_strided_copy(dst, dst_strides, src, src_strides, sizes, itemsize));
}

void copy_same_dtype(const Tensor& dst, const Tensor& src) {
  KILN_INTERNAL_ASSERT(dst.dtype() == src.dtype() && dst.dim() == src.dim());
  if (dst.impl()->is_meta() && src.impl()->is_meta()) return;  // Note [Meta tensors have no data]
  copy_strided(static_cast<char*>(dst.data_ptr()), dst.strides(), static_cast<const char*>(src.data_ptr()),
               src.strides(), dst.sizes(), dst.itemsize());
}

Tensor contiguous_values(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  copy_same_dtype(out, self);
  return out;
}

// --- layouts ---------------------------------------------------------------------

bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  const size_t n = sizes.size();
  if (n == 0 || product(sizes) == 0) return true;  // empty tensors count as contiguous, as PyTorch
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  DimVector perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Dims of size 0 and 1 go last; the rest by increasing stride.
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t required = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != required) return false;
    required *= size;
  }
  return true;
}

DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  const size_t n = sizes.size();
  // perm[0] is the innermost dim; start from row-major and insertion-sort by
  // stride (stable; stride 0 compares as ambiguous and stays, as PyTorch).
  DimVector perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(n - 1 - i);
  auto should_swap = [&](int64_t d0, int64_t d1) {
    const int64_t s0 = strides[d0];
    const int64_t s1 = strides[d1];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    return sizes[d0] > sizes[d1] ? 1 : 0;
  };
  for (size_t i = 1; i < n; ++i) {
    size_t d1 = i;
    for (size_t j = 1; j <= i; ++j) {
      const size_t d0 = i - j;
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  DimVector out(n);
  int64_t stride = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = perm[i];
    out[d] = stride;
    if (sizes[d] > 1) stride *= sizes[d];
  }
  return out;
}

namespace {

/// PyTorch's is_channels_last_strides_2d/3d over the dims in `order` (innermost first).
bool strides_like_channels_last(const Tensor& t, std::initializer_list<int64_t> order) {
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  int64_t min = 0;
  if (strides[1] == 0) return false;  // trivial channels: NCHW by default
  for (int64_t d : order) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N111 and the like are ambiguous: NCHW.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

bool channels_last_contiguous(const Tensor& t, std::initializer_list<int64_t> order) {
  int64_t expected = 1;
  for (int64_t d : order) {
    const int64_t size = t.sizes()[d];
    if (size == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace

bool is_contiguous_as(const Tensor& t, MemoryFormat format) {
  if (format == MemoryFormat::ChannelsLast) return t.dim() == 4 && channels_last_contiguous(t, {1, 3, 2, 0});
  if (format == MemoryFormat::ChannelsLast3d) return t.dim() == 5 && channels_last_contiguous(t, {1, 4, 3, 2, 0});
  return t.is_contiguous();
}

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.dim() == 4 && strides_like_channels_last(t, {1, 3, 2, 0})) return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && strides_like_channels_last(t, {1, 4, 3, 2, 0})) return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

Tensor empty_like_format(const Tensor& self, MemoryFormat format, std::optional<DType> dtype,
                         std::optional<Device> device) {
  const Device where = device.value_or(self.device());
  const DType type = dtype.value_or(self.dtype());
  if (format == MemoryFormat::Preserve) {
    if (is_non_overlapping_and_dense(self.sizes(), self.strides())) {
      return empty_strided(self.sizes(), self.strides(), type, where);
    }
    return empty_strided(self.sizes(), infer_dense_strides(self.sizes(), self.strides()), type, where);
  }
  KILN_CHECK(format != MemoryFormat::ChannelsLast || self.dim() == 4,
             "required rank 4 tensor to use channels_last format");
  KILN_CHECK(format != MemoryFormat::ChannelsLast3d || self.dim() == 5,
             "required rank 5 tensor to use channels_last_3d format");
  return empty_strided(self.sizes(), strides_for_memory_format(self.sizes(), format), type, where);
}

// --- overlap -----------------------------------------------------------------------

void check_no_internal_overlap(const Tensor& out) {
  if (is_non_overlapping_and_dense(out.sizes(), out.strides())) return;
  for (int64_t d = 0; d < out.dim(); ++d) {
    KILN_CHECK(!(out.strides()[d] == 0 && out.sizes()[d] > 1),
               "unsupported operation: more than one element of the written-to tensor refers to a single memory "
               "location. Please clone() the tensor before performing the operation.");
  }
}

void check_no_overlap(const Tensor& out, const Tensor& input) {
  if (out.numel() == 0 || input.numel() == 0) return;
  const bool same_impl = out.is_same(input);
  if (!same_impl) {
    // Only dense tensors on one storage are judged; the rest are "too hard", as PyTorch.
    if (!is_non_overlapping_and_dense(out.sizes(), out.strides()) ||
        !is_non_overlapping_and_dense(input.sizes(), input.strides())) {
      return;
    }
    if (out.storage().get() != input.storage().get()) return;
    const auto* a_begin = static_cast<const char*>(out.data_ptr());
    const auto* a_end = a_begin + out.nbytes();
    const auto* b_begin = static_cast<const char*>(input.data_ptr());
    const auto* b_end = b_begin + input.nbytes();
    if (!(a_begin < b_end && b_begin < a_end)) return;
  }
  KILN_FAIL(Runtime, "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
            "single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace kiln::native
