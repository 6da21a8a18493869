// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC'11): a counter-based generator. One call maps a 128-bit
// counter and a 64-bit key to 128 random bits; there is no sequential state, so
// any element's numbers can be computed on any thread.
// See Note [Counter-based random numbers] (eager/kernels/random/Generator.h).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace kiln::random {

inline constexpr uint32_t kPhiloxM0 = 0xD2511F53;  // round multipliers
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9;  // key schedule: golden ratio
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85;  // key schedule: sqrt(3) - 1
inline constexpr int kPhiloxRounds = 10;

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// One Philox4x32-10 block: Random123's philox4x32 with R = 10 (its known-answer
/// vectors are in tests/cpp/test_random.cpp).
[[nodiscard]] constexpr PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

/// The block numbered `block` of the stream of `seed`: counter (block, 0), key seed.
[[nodiscard]] constexpr PhiloxCounter philox_block(uint64_t seed, uint64_t block) {
  return philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Note [Random groups]
// --------------------
// Random ops consume Philox blocks in groups of kGroupBlocks = 16 consecutive
// blocks. Group g of an op whose inputs are (seed, offset) is blocks
// offset + 16g ... offset + 16g + 15; their words, lane r of block r and word w,
// form the group's 64 32-bit words in the order word-major: word 16w + r.
// An op that needs one 32-bit word per element (float uniforms, bernoulli masks,
// 32-bit integers) gives group g elements 64g ... 64g + 63; an op that needs 64
// bits per element (double uniforms, 64-bit integers) gives it elements
// 32g ... 32g + 31, element 32g + 16v + r taking words 32v + r (low) and
// 32v + 16 + r (high). Each element's words thus depend only on (seed,
// offset, its index), never on the thread count or the CPU capability; an op
// advances the generator's offset by 16 blocks per group it touches. (Integer
// and [0, 1) uniform results are therefore bit-identical on every capability;
// the transcendental transforms, normal and exponential through SLEEF, may
// differ in the last ulp between the AVX2 and AVX-512 builds.)
inline constexpr int64_t kGroupBlocks = 16;
inline constexpr int64_t kGroupWords = 4 * kGroupBlocks;

/// Elements per group for an op taking `words_per_element` (1 or 2) words each.
[[nodiscard]] constexpr int64_t group_elements(int words_per_element) { return kGroupWords / words_per_element; }

/// Group g's 64 words, in the order of Note [Random groups] (the scalar
/// reference; the kernels compute the same words with SIMD).
inline void philox_group_words(uint64_t seed, uint64_t first_block, uint32_t* words) {
  for (int64_t r = 0; r < kGroupBlocks; ++r) {
    const PhiloxCounter out = philox_block(seed, first_block + static_cast<uint64_t>(r));
    for (int w = 0; w < 4; ++w) words[kGroupBlocks * w + r] = out[static_cast<size_t>(w)];
  }
}

/// The word test bernoulli(p) makes: a 32-bit word x is a hit when
/// x / 2^32 < p, i.e. x < ceil(p 2^32) (p 2^32 is exact); `always` when that
/// bound passes 2^32 - 1 (p = 1), where no word fails.
struct BernoulliThreshold {
  uint32_t threshold = 0;
  bool always = false;
  [[nodiscard]] bool hit(uint32_t word) const { return always || word < threshold; }
};

[[nodiscard]] inline BernoulliThreshold bernoulli_threshold(double p) {
  const auto bound = static_cast<uint64_t>(std::ceil(p * 4294967296.0));
  return {static_cast<uint32_t>(bound > 0xFFFFFFFFull ? 0xFFFFFFFFull : bound), bound > 0xFFFFFFFFull};
}

}  // namespace kiln::random
