// repeat_interleave's blocks, compiled per CPU capability: each source block
// written repeats[i] times (memcpy for long blocks, a fill for single elements).
#include <cstring>

#include "eager/kernels/cpu/ElementWord.h"

#include "eager/kernels/cpu/shape/Repeat.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
void interleave_blocks(const InterleavePlan& p, int64_t begin, int64_t end) {
  constexpr auto w = static_cast<int64_t>(sizeof(T));
  const int64_t block_bytes = p.inner * w;
  for (int64_t b = begin; b < end; ++b) {
    const int64_t o = b / p.n;
    const int64_t i = b % p.n;
    const char* src = p.src + b * block_bytes;
    char* dst = p.dst + (o * p.total + p.offsets[i]) * block_bytes;
    const int64_t reps = p.repeats[i];
    if (p.inner == 1) {
      T v;
      std::memcpy(&v, src, sizeof(T));
      for (int64_t r = 0; r < reps; ++r) std::memcpy(dst + r * w, &v, sizeof(T));
      continue;
    }
    for (int64_t r = 0; r < reps; ++r) std::memcpy(dst + r * block_bytes, src, static_cast<size_t>(block_bytes));
  }
}

void interleave_blocks_kernel(const InterleavePlan& p, int64_t begin, int64_t end) {
  with_element_word(p.itemsize, [&](auto word) { interleave_blocks<decltype(word)>(p, begin, end); });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(interleave_blocks_stub, &KILN_CPU_NS::interleave_blocks_kernel);

}  // namespace kiln::native
