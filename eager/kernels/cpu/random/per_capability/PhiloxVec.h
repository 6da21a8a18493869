// Philox4x32-10 on SIMD lanes, compiled per CPU capability (included by the
// kernels that draw from a generator: RandomKernel.cpp, AttentionKernel.cpp):
// one lane per block, the 64 words of a group (Note [Random groups],
// eager/kernels/random/Philox.h) at a time, equal to random::philox_group_words.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/cpu/vec/Vec.h"
#include "eager/kernels/random/Philox.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace philox_vec {

typedef uint32_t U32V __attribute__((vector_size(kVecBytes)));
typedef uint64_t U64V __attribute__((vector_size(kVecBytes)));
typedef int32_t I32V __attribute__((vector_size(kVecBytes)));
constexpr int64_t kU32Lanes = kVecBytes / 4;
constexpr int64_t kVectorsPerGroup = random::kGroupBlocks / kU32Lanes;
static_assert(random::kGroupBlocks % kU32Lanes == 0, "a group is a whole number of vectors");

/// Lanes 0, 2, 4, ... of a and b multiplied into 64-bit products (pmuludq).
inline U64V mul_even_lanes(U32V a, U32V b) {
#if defined(__AVX512F__)
  return (U64V)_mm512_mul_epu32((__m512i)a, (__m512i)b);
#elif defined(__AVX2__)
  return (U64V)_mm256_mul_epu32((__m256i)a, (__m256i)b);
#else
  return (U64V)_mm_mul_epu32((__m128i)a, (__m128i)b);
#endif
}

/// The high and low 32 bits of a * m, lane by lane.
inline void mulhilo(U32V a, U32V m, U32V& hi, U32V& lo) {
  constexpr uint64_t kLow = 0xFFFFFFFFull;
  const U64V even = mul_even_lanes(a, m);
  const U64V odd = mul_even_lanes((U32V)((U64V)a >> 32), m);
  lo = (U32V)((even & kLow) | (odd << 32));
  hi = (U32V)((even >> 32) | (odd & ~kLow));
}

/// The 64 words of the group starting at block `first_block` (word 16w + r is
/// word w of block first_block + r), equal to random::philox_group_words.
inline void philox_group(uint64_t seed, uint64_t first_block, uint32_t* words) {
  const U32V m0 = U32V{} + random::kPhiloxM0, m1 = U32V{} + random::kPhiloxM1;
  U32V iota;
  for (int64_t l = 0; l < kU32Lanes; ++l) iota[l] = static_cast<uint32_t>(l);
  for (int64_t v = 0; v < kVectorsPerGroup; ++v) {
    const uint64_t base = first_block + static_cast<uint64_t>(v * kU32Lanes);
    const U32V base_lo = U32V{} + static_cast<uint32_t>(base);
    U32V c0 = base_lo + iota;
    // The high word carries where the low one wrapped (a comparison is -1 where true).
    U32V c1 = (U32V{} + static_cast<uint32_t>(base >> 32)) - (U32V)(c0 < base_lo);
    U32V c2 = U32V{}, c3 = U32V{};
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < random::kPhiloxRounds; ++round) {
      if (round > 0) {
        k0 += random::kPhiloxW0;
        k1 += random::kPhiloxW1;
      }
      U32V hi0, lo0, hi1, lo1;
      mulhilo(c0, m0, hi0, lo0);
      mulhilo(c2, m1, hi1, lo1);
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
    }
    std::memcpy(words + 0 * random::kGroupBlocks + v * kU32Lanes, &c0, sizeof(U32V));
    std::memcpy(words + 1 * random::kGroupBlocks + v * kU32Lanes, &c1, sizeof(U32V));
    std::memcpy(words + 2 * random::kGroupBlocks + v * kU32Lanes, &c2, sizeof(U32V));
    std::memcpy(words + 3 * random::kGroupBlocks + v * kU32Lanes, &c3, sizeof(U32V));
  }
}

}  // namespace philox_vec
}  // namespace KILN_CPU_NS
}  // namespace kiln::native
