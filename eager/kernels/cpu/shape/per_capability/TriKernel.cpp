// tril/triu rows, compiled per CPU capability: the kept columns copied (one
// memcpy when both rows are dense), the others zeroed.
#include <algorithm>
#include <cstring>

#include "eager/kernels/cpu/ElementWord.h"

#include "eager/kernels/cpu/shape/Tri.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
void tri_row(const TriPlan& p, char* dst, const char* src, int64_t keep_begin, int64_t keep_end) {
  constexpr auto w = static_cast<int64_t>(sizeof(T));
  const int64_t ds = p.dst_col_stride;
  const int64_t ss = p.src_col_stride;
  auto zero = [&](int64_t b, int64_t e) {
    if (b >= e) return;
    if (ds == w) {
      std::memset(dst + b * w, 0, static_cast<size_t>((e - b) * w));
    } else {
      const T z{};
      for (int64_t j = b; j < e; ++j) std::memcpy(dst + j * ds, &z, sizeof(T));
    }
  };
  zero(0, keep_begin);
  zero(keep_end, p.cols);
  if (p.in_place || keep_begin >= keep_end) return;
  if (ds == w && ss == w) {
    std::memcpy(dst + keep_begin * w, src + keep_begin * w, static_cast<size_t>((keep_end - keep_begin) * w));
    return;
  }
  for (int64_t j = keep_begin; j < keep_end; ++j) std::memcpy(dst + j * ds, src + j * ss, sizeof(T));
}

template <typename T>
void tri_rows(const TriPlan& p, int64_t begin, int64_t end) {
  for (int64_t index = begin; index < end; ++index) {
    int64_t batch = index / p.rows;
    const int64_t i = index % p.rows;
    int64_t doff = i * p.dst_row_stride;
    int64_t soff = i * p.src_row_stride;
    for (int d = p.nbatch - 1; d >= 0; --d) {
      const int64_t c = batch % p.batch_sizes[d];
      batch /= p.batch_sizes[d];
      doff += c * p.dst_batch_strides[d];
      soff += c * p.src_batch_strides[d];
    }
    // tril keeps [0, i + k + 1), triu keeps [i + k, cols), clamped to the row.
    const int64_t keep_begin = p.lower ? 0 : std::clamp<int64_t>(i + p.k, 0, p.cols);
    const int64_t keep_end = p.lower ? std::clamp<int64_t>(i + p.k + 1, 0, p.cols) : p.cols;
    tri_row<T>(p, p.dst + doff, p.src + soff, keep_begin, keep_end);
  }
}

void tri_rows_kernel(const TriPlan& p, int64_t begin, int64_t end) {
  with_element_word(p.itemsize, [&](auto word) { tri_rows<decltype(word)>(p, begin, end); });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(tri_rows_stub, &KILN_CPU_NS::tri_rows_kernel);

}  // namespace kiln::native
