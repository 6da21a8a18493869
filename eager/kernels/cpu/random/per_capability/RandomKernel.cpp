// Random fill loops, compiled per CPU capability: Philox4x32-10 on SIMD lanes
// (one lane per block, 16 blocks per group) and the transforms of its words
// into uniform, normal, integer, exponential and bernoulli values.
// See Note [Random groups] (eager/kernels/random/Philox.h).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>

#include "eager/core/Half.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/random/RandomStubs.h"
#include "eager/kernels/cpu/random/per_capability/PhiloxVec.h"
#include "eager/kernels/cpu/vec/Vec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

using random::kGroupBlocks;
using random::kGroupWords;
using namespace philox_vec;  // philox_group and its SIMD lane types (PhiloxVec.h)

/// The 64-bit value of element e (< 32) of a group: words 32v + r and 32v + 16 + r, e = 16v + r.
inline uint64_t word64(const uint32_t* words, int64_t e) {
  const int64_t v = e / kGroupBlocks, r = e % kGroupBlocks;
  return static_cast<uint64_t>(words[32 * v + r]) | (static_cast<uint64_t>(words[32 * v + 16 + r]) << 32);
}

/// Runs transform(words, out, group) for every group of `fill`; `out` holds
/// group_elements(words_per_element) elements (a scratch buffer for the last,
/// partial group). Groups are split across threads by count only.
template <typename T, typename Transform>
void for_each_group(const RandomFill& fill, int words_per_element, const Transform& transform) {
  const int64_t per_group = random::group_elements(words_per_element);
  const int64_t groups = (fill.numel + per_group - 1) / per_group;
  T* const out = static_cast<T*>(fill.data);
  parallel_for(0, groups, std::max<int64_t>(1, kGrainSize / per_group), [&](int64_t begin, int64_t end) {
    alignas(64) uint32_t words[kGroupWords];
    alignas(64) T scratch[kGroupWords];
    for (int64_t g = begin; g < end; ++g) {
      philox_group(fill.philox.seed, fill.philox.offset + static_cast<uint64_t>(g * kGroupBlocks), words);
      const int64_t first = g * per_group;
      const int64_t count = std::min(per_group, fill.numel - first);
      if (count == per_group) {
        transform(words, out + first);
      } else {
        transform(words, scratch);
        std::memcpy(out + first, scratch, static_cast<size_t>(count) * sizeof(T));
      }
    }
  });
}

/// Calls fn(T{}) for the floating dtypes (the random float ops' dtypes).
template <typename Fn>
void visit_floating(DType dtype, const Fn& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    case DType::Float16: fn(Half{}); return;
    case DType::BFloat16: fn(BFloat16{}); return;
    default: KILN_INTERNAL_ASSERT(false);
  }
}

/// Mantissa bits a uniform of T carries (std::numeric_limits<T>::digits).
template <typename T>
constexpr int uniform_digits() {
  if constexpr (std::is_same_v<T, double>) return 53;
  if constexpr (std::is_same_v<T, Half>) return 11;
  if constexpr (std::is_same_v<T, BFloat16>) return 8;
  return 24;
}

/// Float uniforms in [0, 1) from the top `digits` bits of each of the 64 words.
template <int digits>
void uniform_floats(const uint32_t* words, float* u) {
  using VF = Vec<float>;
  constexpr float scale = 1.0f / static_cast<float>(1u << digits);
  for (int64_t i = 0; i < kGroupWords; i += VF::size) {
    U32V w;
    std::memcpy(&w, words + i, sizeof(U32V));
    const I32V k = (I32V)(w >> (32 - digits));  // < 2^24: exact as int and as float
    VF x;
    x.v = __builtin_convertvector(k, typename VF::Native);
    (x * VF::splat(scale)).storeu(u + i);
  }
}

/// Double uniforms in [0, 1) from the 32 64-bit values of a group: the top 53
/// bits of (high << 32 | low), computed as high 2^-32 + (low >> 11) 2^-53 (both
/// exact, and so is their sum), which vectorises.
void uniform_doubles(const uint32_t* words, double* u) {
  for (int64_t v = 0; v < 2; ++v) {
    const uint32_t* low = words + 32 * v;
    const uint32_t* high = low + kGroupBlocks;
    double* out = u + kGroupBlocks * v;
    for (int64_t r = 0; r < kGroupBlocks; ++r) {
      out[r] = static_cast<double>(high[r]) * 0x1.0p-32 + static_cast<double>(low[r] >> 11) * 0x1.0p-53;
    }
  }
}

// --- uniform -------------------------------------------------------------------

void uniform_fill_kernel(const RandomFill& fill, double from, double to) {
  visit_floating(fill.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      const double range = to - from;
      for_each_group<double>(fill, 2, [&](const uint32_t* words, double* out) {
        uniform_doubles(words, out);
        for (int64_t e = 0; e < kGroupWords / 2; ++e) out[e] = out[e] * range + from;
      });
    } else {
      // Computed in float (PyTorch's dist_acctype) from T's from, to and to - from, on T's own mantissa.
      const float f = static_cast<float>(static_cast<T>(from));
      const float range = static_cast<float>(static_cast<T>(static_cast<float>(static_cast<T>(to)) - f));
      for_each_group<T>(fill, 1, [&](const uint32_t* words, T* out) {
        alignas(64) float u[kGroupWords];
        uniform_floats<uniform_digits<T>()>(words, u);
        for (int64_t e = 0; e < kGroupWords; ++e) out[e] = static_cast<T>(u[e] * range + f);
      });
    }
  });
}

// --- normal (Box-Muller) -----------------------------------------------------------

/// Standard normals by Box-Muller over n uniforms: pairs (u[i], u[n/2 + i]) give
/// z[i] = r cos(theta), z[n/2 + i] = r sin(theta), r = sqrt(-2 log(1 - u[i])),
/// theta = 2 pi u[n/2 + i] (1 - u is in (0, 1], so the log is finite).
template <typename F, int64_t n>
void box_muller(F* z) {
  using V = Vec<F>;
  constexpr int64_t half = n / 2;
  static_assert(half % V::size == 0, "whole vectors");
  const V one = V::splat(F(1)), minus_two = V::splat(F(-2)), two_pi = V::splat(static_cast<F>(2 * std::numbers::pi));
  for (int64_t i = 0; i < half; i += V::size) {
    const V u1 = one - V::loadu(z + i);
    const V theta = two_pi * V::loadu(z + half + i);
    const V radius = vsqrt(minus_two * vlog(u1));
    (radius * vcos(theta)).storeu(z + i);
    (radius * vsin(theta)).storeu(z + half + i);
  }
}

void normal_fill_kernel(const RandomFill& fill, double mean, double std) {
  visit_floating(fill.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      for_each_group<double>(fill, 2, [&](const uint32_t* words, double* out) {
        uniform_doubles(words, out);
        box_muller<double, kGroupWords / 2>(out);
        for (int64_t e = 0; e < kGroupWords / 2; ++e) out[e] = out[e] * std + mean;
      });
    } else {
      const float m = static_cast<float>(mean), s = static_cast<float>(std);
      for_each_group<T>(fill, 1, [&](const uint32_t* words, T* out) {
        alignas(64) float z[kGroupWords];
        uniform_floats<24>(words, z);
        box_muller<float, kGroupWords>(z);
        for (int64_t e = 0; e < kGroupWords; ++e) out[e] = static_cast<T>(z[e] * s + m);
      });
    }
  });
}

// --- integers ------------------------------------------------------------------------

void random_range_fill_kernel(const RandomFill& fill, uint64_t range, int64_t base) {
  visit_dtype(fill.dtype, [&](auto tag) {
    using T = decltype(tag);
    // PyTorch's uniform_int_from_to: static_cast<T>(static_cast<int64_t>(x % range + base)).
    auto to_out = [](uint64_t v) -> T {
      const auto i = static_cast<int64_t>(v);
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        return T(static_cast<float>(i));
      } else {
        return static_cast<T>(i);
      }
    };
    if (range_words(range) == 1) {
      const bool whole = range == (uint64_t{1} << 32);
      const auto r32 = static_cast<uint32_t>(range);
      for_each_group<T>(fill, 1, [&](const uint32_t* words, T* out) {
        for (int64_t e = 0; e < kGroupWords; ++e) {
          const uint64_t x = whole ? words[e] : words[e] % r32;
          out[e] = to_out(x + static_cast<uint64_t>(base));
        }
      });
    } else {
      for_each_group<T>(fill, 2, [&](const uint32_t* words, T* out) {
        for (int64_t e = 0; e < kGroupWords / 2; ++e) {
          const uint64_t x = range == 0 ? word64(words, e) : word64(words, e) % range;
          out[e] = to_out(x + static_cast<uint64_t>(base));
        }
      });
    }
  });
}

// --- exponential -------------------------------------------------------------------

void exponential_fill_kernel(const RandomFill& fill, double lambda) {
  visit_floating(fill.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      const double scale = -1.0 / lambda;
      for_each_group<double>(fill, 2, [&](const uint32_t* words, double* out) {
        for (int64_t e = 0; e < kGroupWords / 2; ++e) {
          out[e] = (static_cast<double>(word64(words, e) >> 12) + 0.5) * 0x1.0p-52;  // in (0, 1)
        }
        using V = Vec<double>;
        for (int64_t e = 0; e < kGroupWords / 2; e += V::size) (vlog(V::loadu(out + e)) * V::splat(scale)).storeu(out + e);
      });
    } else {
      const float scale = static_cast<float>(-1.0 / lambda);
      // log(u) <= -epsilon(T) / 2, so a 16-bit result does not round to 0 (as PyTorch's CUDA kernel).
      const float max_log = std::is_same_v<T, Half> ? -0x1.0p-11f : std::is_same_v<T, BFloat16> ? -0x1.0p-8f : 0.0f;
      for_each_group<T>(fill, 1, [&](const uint32_t* words, T* out) {
        alignas(64) float u[kGroupWords];
        for (int64_t e = 0; e < kGroupWords; ++e) {
          u[e] = (static_cast<float>(words[e] >> 9) + 0.5f) * 0x1.0p-23f;  // in (0, 1), exact
        }
        using V = Vec<float>;
        for (int64_t e = 0; e < kGroupWords; e += V::size) {
          (minimum(vlog(V::loadu(u + e)), V::splat(max_log)) * V::splat(scale)).storeu(u + e);
        }
        for (int64_t e = 0; e < kGroupWords; ++e) out[e] = static_cast<T>(u[e]);
      });
    }
  });
}

// --- bernoulli with one p ----------------------------------------------------------

void bernoulli_scalar_fill_kernel(const RandomFill& fill, double p) {
  const random::BernoulliThreshold test = random::bernoulli_threshold(p);
  visit_dtype(fill.dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_group<T>(fill, 1, [&](const uint32_t* words, T* out) {
      alignas(64) int32_t hit[kGroupWords];
      for (int64_t e = 0; e < kGroupWords; ++e) hit[e] = test.hit(words[e]) ? 1 : 0;
      for (int64_t e = 0; e < kGroupWords; ++e) {
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          out[e] = T(static_cast<float>(hit[e]));
        } else {
          out[e] = static_cast<T>(hit[e]);
        }
      }
    });
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(uniform_fill_stub, &KILN_CPU_NS::uniform_fill_kernel);
KILN_REGISTER_DISPATCH(normal_fill_stub, &KILN_CPU_NS::normal_fill_kernel);
KILN_REGISTER_DISPATCH(random_range_fill_stub, &KILN_CPU_NS::random_range_fill_kernel);
KILN_REGISTER_DISPATCH(exponential_fill_stub, &KILN_CPU_NS::exponential_fill_kernel);
KILN_REGISTER_DISPATCH(bernoulli_scalar_fill_stub, &KILN_CPU_NS::bernoulli_scalar_fill_kernel);

}  // namespace kiln::native
