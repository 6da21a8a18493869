// copy_bytes_streaming: a dense byte copy whose stores bypass the cache, for
// kernels (compiled per CPU capability) that write outputs bigger than the
// last-level cache. See Note [Streaming stores] (vec/VecBinary.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef KILN_CPU_NS
#error "StreamingCopy.h is only for kernel files compiled per CPU capability (eager/kernels/cpu/*/per_capability/)"
#endif

namespace kiln::native::KILN_CPU_NS {

/// copy_bytes with non-temporal stores once dst is 32-byte aligned, for copies
/// bigger than the cache (Note [Streaming stores], vec/VecBinary.h): on AMD
/// EPYC (Zen 4/5) clone() of 16 MiB went from 0.99 to ~0.5 ms, the time neg() takes.
/// The caller fences (_mm_sfence) before its threads join.
inline void copy_bytes_streaming(char* dst, const char* src, int64_t bytes) {
#if defined(__AVX2__)
  const auto misalignment = static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) % 32);
  int64_t i = misalignment == 0 ? 0 : std::min<int64_t>(32 - misalignment, bytes);
  std::memcpy(dst, src, static_cast<size_t>(i));
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
#else
  std::memcpy(dst, src, static_cast<size_t>(bytes));
#endif
}

/// Orders this thread's streaming stores before anything after it (a join).
inline void streaming_fence() {
#if defined(__AVX2__)
  _mm_sfence();
#endif
}

}  // namespace kiln::native::KILN_CPU_NS
