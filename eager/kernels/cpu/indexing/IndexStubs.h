// Dispatch stubs of the indexing loops (defined per capability in
// eager/kernels/cpu/indexing/per_capability/Index*Kernel.cpp). See Note [Indexing by byte offsets].
#pragma once

#include <cstdint>

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// Which index values are valid along a dim of size n, and how they map to a position.
enum class IndexWrap : uint8_t {
  Negative,     // [-n, n), negative counts from the end (index, index_put_, index_fill_)
  NonNegative,  // [0, n) (gather, scatter, index_select, index_add_)
  Modular,      // any value, taken modulo n (take_along_dim); n > 0
};

/// How a put combines a value with the element it lands on.
enum class PutReduce : uint8_t { Assign, Add, Multiply, Max, Min };  // Max/Min: NaN wins, as torch's amax/amin

/// Operands: output offsets (int64), [input offsets (int64),] input index (int64 or int32).
/// Writes [offsets +] wrap(index) * stride_bytes. Returns false when some index is
/// out of range for `size` (the outputs are then unspecified).
using index_offsets_fn = bool (*)(TensorIterator& iter, int64_t size, int64_t stride_bytes, IndexWrap wrap);
KILN_DECLARE_DISPATCH(index_offsets_fn, index_offsets_stub);

/// Operands: output out, input src (restrided), input offsets (int64 bytes):
/// out[i] = *(src[i] + offsets[i]); out and src have the same dtype.
using index_gather_fn = void (*)(TensorIterator& iter);
KILN_DECLARE_DISPATCH(index_gather_fn, index_gather_stub);

/// Operands: output out, input src (restrided), input index (int64 or int32, restrided to
/// out's shape): out[i] = *(src[i] + wrap(index[i]) * stride_bytes), one pass for ops with a
/// single index tensor and a fresh result. Returns false when some index is out of range
/// for `size` (out is then unspecified and must be dropped).
using index_gather_direct_fn = bool (*)(TensorIterator& iter, int64_t size, int64_t stride_bytes, IndexWrap wrap);
KILN_DECLARE_DISPATCH(index_gather_direct_fn, index_gather_direct_stub);

/// Operands, all inputs: dst (restrided, written through), values, offsets (int64 bytes):
/// *(dst[i] + offsets[i]) = / += alpha * / *= values[i], serially in the iterator's
/// order, so repeated offsets accumulate the same way whatever the thread count.
using index_put_fn = void (*)(TensorIterator& iter, PutReduce reduce, const Scalar& alpha);
KILN_DECLARE_DISPATCH(index_put_fn, index_put_stub);

/// The same through one non-negative index tensor (int32 or int64) instead of offsets:
/// operands dst (restrided), values, index; *(dst[i] + index[i] * stride_bytes) op= values[i].
/// Every index is checked against `size` first; when one is out of range nothing is
/// written and it returns false. (scatter_add_ of 8K elements: no offsets tensor.)
using index_put_direct_fn = bool (*)(TensorIterator& iter, int64_t size, int64_t stride_bytes, PutReduce reduce,
                                     const Scalar& alpha);
KILN_DECLARE_DISPATCH(index_put_direct_fn, index_put_direct_stub);

/// Nonzero elements of a contiguous tensor, counted per chunk of `chunk` elements:
/// counts[c] for c in [0, ceil(numel / chunk)).
using nonzero_count_fn = void (*)(const Tensor& contiguous, int64_t chunk, int64_t* counts);
KILN_DECLARE_DISPATCH(nonzero_count_fn, nonzero_count_stub);

/// Writes the coordinates of the nonzero elements of `contiguous` into the rows of
/// `out` (n x ndim int64, any strides); chunk c fills rows [first_row[c], first_row[c + 1]).
using nonzero_fill_fn = void (*)(const Tensor& contiguous, int64_t chunk, const int64_t* first_row, const Tensor& out);
KILN_DECLARE_DISPATCH(nonzero_fill_fn, nonzero_fill_stub);

/// result[i] = the insertion point of input[i] in its row of `boundaries` (all
/// contiguous; input and boundaries of one dtype; sorter undefined or int64;
/// result int64 or int32).
using searchsorted_fn = void (*)(const Tensor& result, const Tensor& input, const Tensor& boundaries,
                                 const Tensor& sorter, bool right);
KILN_DECLARE_DISPATCH(searchsorted_fn, searchsorted_stub);

}  // namespace kiln::native
