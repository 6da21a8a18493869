// Pieces every indexing op shares: restrided views, index-to-offset conversion
// with bounds checks, overlap checks, and small tensor helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "eager/core/Scalar.h"
#include "eager/kernels/cpu/indexing/IndexStubs.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::indexing {

// Note [Indexing by byte offsets]
// -------------------------------
// Every indexing op here runs in two passes.
//  1. Offsets. The index tensors are turned into one int64 tensor of byte
//     offsets, offsets = sum_j wrap(index_j) * stride_j * itemsize, by
//     index_offsets_stub, one index tensor at a time (so any number of them).
//     This pass also checks every index against its dim's size; only when all
//     are valid does anything get read or written, so a failed check leaves
//     every tensor as it was. The first bad index in row-major order is named
//     in the error. (Ops reading through a single index into a fresh result
//     fuse the two passes, run_gather_direct: a bad index then only spoils a
//     result nobody sees.)
//  2. Move. A TensorIterator runs over the result's shape (gather, index,
//     index_select, take: out[i] = *(src[i] + offsets[i])) or the updates'
//     shape (index_put_, scatter, index_add_, index_fill_, masked_scatter_:
//     *(dst[i] + offsets[i]) op= values[i]). `src`/`dst` is the source tensor
//     restrided like PyTorch's restride_src: its indexed dims are replaced by the
//     index shape with stride 0, so src[i] points at the start of the slice and
//     the offset picks the element. `offsets` is restrided to the same shape
//     with stride 0 along the dims it does not vary over. Puts run serially so
//     repeated indices accumulate in one order whatever the thread count.

/// A view of `t`'s storage with the given geometry (no copy, no bounds check
/// beyond the storage's): the restriding in Note [Indexing by byte offsets].
[[nodiscard]] Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides);
/// `t` read as `shape` by broadcasting (stride 0 along new and size-1 dims); the
/// caller has checked the shapes are compatible.
[[nodiscard]] Tensor expand_to(const Tensor& t, IntArrayRef shape);
/// PyTorch's expand error when `t` cannot be read as `shape`:
/// "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0. ...".
void check_expandable(const Tensor& t, IntArrayRef shape);
/// Whether a tensor of `from` sizes broadcasts to `to` without changing `to`.
[[nodiscard]] bool is_expandable_to(IntArrayRef from, IntArrayRef to);

/// A contiguous copy of `t` (or `t` itself when it is already contiguous).
[[nodiscard]] Tensor contiguous(const Tensor& t);
/// A new tensor holding `t`'s values; dense tensors keep their strides (PyTorch's
/// clone(memory_format=preserve)), others come out contiguous.
[[nodiscard]] Tensor clone_preserving_strides(const Tensor& t);
/// A new contiguous tensor holding `t`'s values.
[[nodiscard]] Tensor clone_contiguous(const Tensor& t);

/// The value of a one-element tensor as a Scalar (float16/bfloat16 as double).
[[nodiscard]] Scalar item(const Tensor& t);
/// A 0-dim tensor of `dtype` holding `value`, converted with PyTorch's overflow
/// check ("value cannot be converted to type uint8_t without overflow").
[[nodiscard]] Tensor scalar_tensor(const Scalar& value, DType dtype);

/// RuntimeError when two elements of `t` share memory (a stride-0 dim of size > 1).
void check_no_internal_overlap(const Tensor& t);
/// RuntimeError when `written` and `read` share memory (other than being the same tensor).
void check_no_overlap(const Tensor& written, const Tensor& read);
/// RuntimeError when `written` and `read` share any memory, the same view included (torch's
/// assert_no_overlap; check_no_overlap is its assert_no_partial_overlap).
void check_disjoint(const Tensor& written, const Tensor& read);
[[nodiscard]] bool has_internal_overlap(const Tensor& t);

/// Out= handling as PyTorch's structured kernels: `out` takes `shape` (resized,
/// with PyTorch's warning when it held elements) and must already have `dtype`
/// ("Expected out tensor to have dtype float, but got double instead").
void prepare_out(const Tensor& out, IntArrayRef shape, DType dtype);

/// An index value outside its dim, found by compute_offsets.
struct BadIndex {
  int64_t value;
};

/// offsets (int64, `index`'s shape, or added into when `offsets` is defined and
/// `accumulate`) = wrap(index) * stride_bytes. Returns the first out-of-range
/// index in row-major order, or nullopt when every index is valid. `index` is
/// int64 or int32; `size` is the indexed dim's size.
[[nodiscard]] std::optional<BadIndex> compute_offsets(Tensor& offsets, const Tensor& index, int64_t size,
                                                      int64_t stride_bytes, IndexWrap wrap, bool accumulate = false);

/// Gathers: out[i] = *(src[i] + offsets[i]); allocates `out` when undefined
/// (laid out by the iterator). Returns the output.
Tensor run_gather(const Tensor& out, const Tensor& src_restrided, const Tensor& offsets_restrided, DType dtype);
/// A gather with a single index tensor in one pass, for fresh results: out[i] = *(src[i] +
/// wrap(index[i]) * stride_bytes), `index_restrided` being `index` read with the result's shape.
/// Allocates `out` when undefined. On a bad index returns the first one (row-major in `index`)
/// and the caller must drop the output; see Note [Indexing by byte offsets].
struct DirectGather {
  Tensor out;
  std::optional<BadIndex> bad;
};
[[nodiscard]] DirectGather run_gather_direct(const Tensor& out, const Tensor& src_restrided,
                                             const Tensor& index_restrided, const Tensor& index, int64_t size,
                                             int64_t stride_bytes, IndexWrap wrap, DType dtype);
/// Puts: *(dst[i] + offsets[i]) op= values[i], values broadcast to dst's shape.
void run_put(const Tensor& dst_restrided, const Tensor& values, const Tensor& offsets_restrided, PutReduce reduce,
             const Scalar& alpha = Scalar(int64_t{1}));

/// run_put through one non-negative index tensor (`index_restrided`: `index` read with
/// dst's shape), offsets computed inline: every index is checked before anything is
/// written. Returns the first bad index (row-major in `index`), nothing written then.
[[nodiscard]] std::optional<BadIndex> run_put_direct(const Tensor& dst_restrided, const Tensor& values,
                                                     const Tensor& index_restrided, const Tensor& index, int64_t size,
                                                     int64_t stride_bytes, PutReduce reduce,
                                                     const Scalar& alpha = Scalar(int64_t{1}));

/// `t` with at least one dim: a 0-dim tensor as shape [1] (a view).
[[nodiscard]] Tensor at_least_1d(const Tensor& t);

}  // namespace kiln::native::indexing
