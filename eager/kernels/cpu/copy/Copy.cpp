// The strided conversion copy.
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cuda/CudaCopy.h"

#include <algorithm>
#include <cstring>

#include "eager/core/Error.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln {

namespace {

/// Visits (dst element, src element) pairs in row-major order of the shared shape.
template <typename D, typename S>
void strided_convert(const Tensor& dst, const Tensor& src) {
  const auto sizes = dst.sizes();
  const auto dstrides = dst.strides();
  const auto sstrides = src.strides();
  const size_t nd = sizes.size();
  D* d = dst.data_ptr<D>();
  const S* s = src.data_ptr<S>();
  if (dst.is_contiguous() && src.is_contiguous()) {
    for (int64_t i = 0; i < dst.numel(); ++i) d[i] = convert_element<D>(s[i]);
    return;
  }
  DimVector index(nd, 0);
  int64_t doff = 0, soff = 0;
  for (int64_t linear = 0; linear < dst.numel(); ++linear) {
    d[doff] = convert_element<D>(s[soff]);
    for (size_t k = nd; k-- > 0;) {
      if (++index[k] < sizes[k]) {
        doff += dstrides[k];
        soff += sstrides[k];
        break;
      }
      doff -= (sizes[k] - 1) * dstrides[k];
      soff -= (sizes[k] - 1) * sstrides[k];
      index[k] = 0;
    }
  }
}

/// Bytes from which a contiguous copy is split across the thread pool (two of copy_strided's grains).
constexpr int64_t kSplitContiguousCopyBytes = int64_t{1} << 18;

}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  KILN_CHECK(dst.sizes().size() == src.sizes().size() &&
                 std::equal(dst.sizes().begin(), dst.sizes().end(), src.sizes().begin()),
             "copy_: the size of the destination ", dst.sizes(), " must match the size of the source ", src.sizes());
  // Note [Meta tensors have no data]: copying into a meta tensor moves nothing;
  // out of one there is nothing to move (PyTorch's words).
  KILN_CHECK_NOT_IMPLEMENTED(!src.device().is_meta() || dst.device().is_meta(),
                             "Cannot copy out of meta tensor; no data!");
  if (dst.device().is_meta()) {
    dst.impl()->bump_version();
    return;
  }
  if (!dst.device().is_cpu() || !src.device().is_cpu()) {
    native::cuda_copy(dst, src, /*non_blocking=*/false);  // a CUDA side: eager/kernels/cuda/CudaCopy.h
    return;
  }
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      (dst.nbytes() < kSplitContiguousCopyBytes || byte_spans_meet(dst, src))) {
    // One memmove: a short copy (not worth waking the pool), or spans that overlap.
    std::memmove(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()));
  } else if (dst.dtype() == src.dtype() && !byte_spans_meet(dst, src)) {
    // The layout copy: rows merged where both sides allow, memcpy / vector rows,
    // tiles for transposes, on the thread pool; a long contiguous copy is one row
    // split across the pool (one memmove of 16M floats: 7.9 ms against torch's 3.8
    // on 2 threads). The element loop below walked a multi-dim counter per element
    // (o[:, :2045].copy_(x[:, 3:]) of 2048 rows: 8-10 ms against torch's 3-4).
    native::copy_strided(static_cast<char*>(dst.data_ptr()), dst.strides(), static_cast<const char*>(src.data_ptr()),
                         src.strides(), dst.sizes(), dst.itemsize());
  } else {
    visit_dtype_and_complex(dst.dtype(), [&](auto dtag) {
      visit_dtype_and_complex(src.dtype(),
                              [&](auto stag) { strided_convert<decltype(dtag), decltype(stag)>(dst, src); });
    });
  }
  dst.impl()->bump_version();
}

Tensor to_dtype_copy(const Tensor& src, DType dtype) {
  Tensor out = empty(src.sizes(), dtype, src.device());
  copy_(out, src);
  return out;
}

}  // namespace kiln
