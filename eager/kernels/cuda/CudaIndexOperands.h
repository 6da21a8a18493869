// The operands of the CUDA indexing kernels described over an iteration shape
// (Note [Indexing through a restrided operand], CudaIndexKernels.cpp): shared
// by CudaIndexKernels.cpp and CudaPutKernels.cpp.
#pragma once

#include <algorithm>
#include <array>

#include "eager/core/Error.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::cuda_kernels {

/// An operand of an iteration shape: data and element strides, one per dim.
struct Strided {
  const void* data;
  DimVector strides;
};

/// The Indexer of N operands over `sizes` (element strides times each operand's item size).
template <int N>
IndexerParam<N> indexer_over(IntArrayRef sizes, const std::array<Strided, N>& ops, int64_t itemsize_0,
                             int64_t itemsize_1, int64_t itemsize_2) {
  const int64_t items[3] = {itemsize_0, itemsize_1, itemsize_2};
  IndexerParam<N> p{};
  const int nd = static_cast<int>(sizes.size());
  KILN_CHECK(nd <= kMaxDims, "CUDA kernels take at most ", kMaxDims, " dimensions");
  p.ndim = nd;
  for (int d = 0; d < nd; ++d) p.sizes[d] = sizes[static_cast<size_t>(nd - 1 - d)];
  for (int k = 0; k < N; ++k) {
    p.data[k] = const_cast<void*>(ops[static_cast<size_t>(k)].data);
    for (int d = 0; d < nd; ++d) {
      p.strides[k][d] = ops[static_cast<size_t>(k)].strides[static_cast<size_t>(nd - 1 - d)] * items[k];
    }
  }
  return p;
}

inline DimVector strides_of(const Tensor& t) { return DimVector(t.strides()); }

inline DimVector with_zero_at(DimVector strides, int64_t dim) {
  strides[static_cast<size_t>(dim)] = 0;
  return strides;
}

/// A 1-D index (stride s) as an operand over `ndim` dims: stride s along dim, 0 elsewhere.
inline DimVector index_along(int64_t ndim, int64_t dim, int64_t stride) {
  DimVector strides(static_cast<size_t>(ndim), 0);
  strides[static_cast<size_t>(dim)] = stride;
  return strides;
}

/// `dim` wrapped into [0, max(ndim, 1)), IndexError as PyTorch's otherwise.
inline int64_t wrap(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
                   "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

inline bool is_index_dtype(DType d) { return d == DType::Int64 || d == DType::Int32; }

}  // namespace kiln::native::cuda_kernels
