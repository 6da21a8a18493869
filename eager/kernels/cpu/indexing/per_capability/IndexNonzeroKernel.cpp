// nonzero's two passes, compiled per CPU capability: count the nonzero elements
// of each fixed-size chunk, then (after the caller's prefix sum) write each
// chunk's coordinates from its first row on. Chunks are cut by size alone, so
// the result never depends on the thread count.
#include <algorithm>
#include <type_traits>

#include "eager/core/SmallVector.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/indexing/IndexStubs.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
inline bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v) != 0.0f;  // NaN counts, as in PyTorch
  } else {
    return v != T(0);
  }
}

void nonzero_count_kernel(const Tensor& self, int64_t chunk, int64_t* counts) {
  const int64_t numel = self.numel();
  const int64_t n_chunks = (numel + chunk - 1) / chunk;
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = self.data_ptr<T>();
    parallel_for(0, n_chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        const int64_t end = std::min(numel, (c + 1) * chunk);
        int64_t n = 0;
        for (int64_t i = c * chunk; i < end; ++i) n += is_nonzero(data[i]) ? 1 : 0;
        counts[c] = n;
      }
    });
  });
}

void nonzero_fill_kernel(const Tensor& self, int64_t chunk, const int64_t* first_row, const Tensor& out) {
  const int64_t numel = self.numel();
  const int64_t n_chunks = (numel + chunk - 1) / chunk;
  const int64_t ndim = self.dim();
  const auto sizes = self.sizes();
  int64_t* out_data = out.data_ptr<int64_t>();
  const int64_t row_stride = out.dim() == 2 ? out.stride(0) : 0;
  const int64_t col_stride = out.dim() == 2 ? out.stride(1) : 0;
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = self.data_ptr<T>();
    parallel_for(0, n_chunks, 1, [&](int64_t cb, int64_t ce) {
      DimVector coord(static_cast<size_t>(ndim), 0);
      for (int64_t c = cb; c < ce; ++c) {
        const int64_t begin = c * chunk;
        const int64_t end = std::min(numel, begin + chunk);
        const int64_t count = first_row[c + 1] - first_row[c];
        int64_t rem = begin;  // the coordinates of `begin`, row-major
        for (int64_t d = ndim - 1; d >= 0; --d) {
          coord[static_cast<size_t>(d)] = rem % sizes[static_cast<size_t>(d)];
          rem /= sizes[static_cast<size_t>(d)];
        }
        int64_t* rows = out_data + first_row[c] * row_stride;
        int64_t written = 0;
        // Branch-free on the data: every element's coordinates are stored in the next free
        // row, which only a nonzero element keeps. Stops once the chunk's rows are full, so
        // no store leaves them.
        for (int64_t i = begin; i < end && written < count; ++i) {
          int64_t* row = rows + written * row_stride;
          for (int64_t d = 0; d < ndim; ++d) row[d * col_stride] = coord[static_cast<size_t>(d)];
          written += is_nonzero(data[i]) ? 1 : 0;
          for (int64_t d = ndim - 1; d >= 0; --d) {  // advance the coordinates by one element
            if (++coord[static_cast<size_t>(d)] < sizes[static_cast<size_t>(d)]) break;
            coord[static_cast<size_t>(d)] = 0;
          }
        }
      }
    });
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(nonzero_count_stub, &KILN_CPU_NS::nonzero_count_kernel);
KILN_REGISTER_DISPATCH(nonzero_fill_stub, &KILN_CPU_NS::nonzero_fill_kernel);

}  // namespace kiln::native
