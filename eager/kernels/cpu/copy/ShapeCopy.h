// Same-dtype layout copies for the shape ops (clone, contiguous, cat, repeat,
// flip, roll, diag_embed, ...): the bytes of one strided region into another.
// See Note [Layout copies].
#pragma once

#include <cstdint>
#include <optional>

#include "eager/core/MemoryFormat.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/cpu/vec/StreamingThreshold.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

// Note [Layout copies]
// --------------------
// The shape ops move elements without converting them, so they copy bytes:
// copy_same_dtype(dst, src) plans the copy once (StridedCopyPlan: dims ordered
// so the destination is written in memory order, neighbours that both sides
// walk densely merged into one) and runs it in parallel over rows above a grain
// size. A row whose both sides are dense is one memcpy; a source walked
// backwards (flip builds it with negative strides) or broadcast (stride 0:
// repeat, expand) has its own loop; a 2-D transpose (contiguous() of a .t())
// copies in cache-sized tiles. Copies that convert dtypes (cat across dtypes)
// go through copy_ (eager/kernels/cpu/copy/Copy.h), which owns conversions.
// Strides here are in bytes and may be negative or zero on the source side;
// the destination never overlaps itself.

/// A planned copy: dims outermost first, at most kMaxCopyDims after merging.
struct StridedCopyPlan {
  static constexpr int kMaxCopyDims = 16;
  char* dst = nullptr;
  const char* src = nullptr;
  int64_t itemsize = 1;
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t dst_strides[kMaxCopyDims] = {};  // bytes
  int64_t src_strides[kMaxCopyDims] = {};  // bytes
  /// The two innermost dims form a transpose (dst dense along the last, src along
  /// the one before): copied in kTransposeTile squares.
  bool tiled = false;
  /// The copy is big enough that its dense rows take non-temporal stores
  /// (kStreamingBytes, StreamingThreshold.h; Note [Streaming stores] in vec/VecBinary.h).
  bool streaming = false;

  [[nodiscard]] int64_t inner_size() const { return ndim > 0 ? sizes[ndim - 1] : 1; }
  /// The product of the dims outside the row (tiled: outside the tile).
  [[nodiscard]] int64_t outer_count() const {
    int64_t n = 1;
    for (int d = 0; d < ndim - (tiled ? 2 : 1); ++d) n *= sizes[d];
    return n;
  }
};

/// Builds the plan for dst[i] = src[i] over `sizes` (strides in elements, as tensors keep them).
[[nodiscard]] StridedCopyPlan plan_strided_copy(char* dst, IntArrayRef dst_strides, const char* src,
                                                IntArrayRef src_strides, IntArrayRef sizes, int64_t itemsize);
/// Runs a plan (in parallel above the grain size).
void run_strided_copy(const StridedCopyPlan& plan);

/// Copies `src` into `dst` element by element: same dtype, same sizes, any strides.
void copy_same_dtype(const Tensor& dst, const Tensor& src);
/// self when it is contiguous, else a contiguous copy (no dispatch: for kernels).
[[nodiscard]] Tensor contiguous_values(const Tensor& self);
/// Copies raw geometry: element strides, the source may use negative or zero strides.
void copy_strided(char* dst, IntArrayRef dst_strides, const char* src, IntArrayRef src_strides, IntArrayRef sizes,
                  int64_t itemsize);

// --- layouts of new tensors, as PyTorch chooses them ---------------------------

/// PyTorch's is_non_overlapping_and_dense: some permutation of the dims is contiguous.
[[nodiscard]] bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);
/// Dense strides that keep the dims' order by stride (PyTorch's infer_dense_strides).
[[nodiscard]] DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides);
/// PyTorch's is_contiguous(memory_format) (Preserve reads as Contiguous).
[[nodiscard]] bool is_contiguous_as(const Tensor& t, MemoryFormat format);
/// PyTorch's suggest_memory_format: ChannelsLast(3d) for 4-D (5-D) tensors strided like it.
[[nodiscard]] MemoryFormat suggest_memory_format(const Tensor& t);
/// An uninitialised tensor like `self` laid out by `format` (PyTorch's empty_like):
/// Preserve keeps a dense layout's strides and otherwise the dims' stride order.
/// RuntimeError "required rank 4 tensor to use channels_last format" as PyTorch.
[[nodiscard]] Tensor empty_like_format(const Tensor& self, MemoryFormat format, std::optional<DType> dtype = std::nullopt,
                                       std::optional<Device> device = std::nullopt);

// --- out= and overlap checks, PyTorch's words ------------------------------------

/// RuntimeError when some elements of `out` and `input` share memory (PyTorch's
/// assert_no_overlap: full or partial overlap of dense tensors on one storage).
void check_no_overlap(const Tensor& out, const Tensor& input);
/// RuntimeError when `out` writes one memory location twice (a broadcast out=).
void check_no_internal_overlap(const Tensor& out);

// --- the loops (eager/kernels/cpu/copy/per_capability/ShapeCopyKernel.cpp) -------------------

/// Edge of the square tiles of a tiled (transposing) plan, in elements.
inline constexpr int64_t kTransposeTile = 16;

/// Rows [begin, end) of a plan: of its outer dims, or for a tiled plan bands of
/// kTransposeTile rows of its second-innermost dim (per outer index).
using strided_copy_rows_fn = void (*)(const StridedCopyPlan& plan, int64_t begin, int64_t end);
KILN_DECLARE_DISPATCH(strided_copy_rows_fn, strided_copy_rows_stub);

/// One dense input of a row concatenation: row r of it is `bytes` bytes at data + r * bytes.
struct RowPiece {
  const char* data;
  int64_t bytes;
};
/// Rows [begin, end) of a concatenation (cat of contiguous inputs): output row r,
/// at out + r * row_bytes, is row r of each piece one after another; `streaming`
/// as StridedCopyPlan::streaming.
using concat_rows_fn = void (*)(char* out, int64_t row_bytes, const RowPiece* pieces, size_t count, int64_t begin,
                                int64_t end, bool streaming);
KILN_DECLARE_DISPATCH(concat_rows_fn, concat_rows_stub);

}  // namespace kiln::native
