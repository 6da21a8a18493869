// 16-bit floating-point storage types: IEEE half (float16) and bfloat16.
// Arithmetic happens in float; these types only convert.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

/// IEEE 754 binary16. Converts with round-to-nearest-even.
struct Half {
  uint16_t bits = 0;

  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a float type
  operator float() const { return to_float(bits); }  // NOLINT

  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }

  static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
    }
    if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (x < 0x38800000u) {  // subnormal half (or zero)
      // Add a magic number so the FPU rounds the mantissa into place.
      const float magic = detail::bits_float(0x3f000000u);  // 0.5
      float v = detail::bits_float(x) + magic;
      return static_cast<uint16_t>(sign | (detail::float_bits(v) - 0x3f000000u));
    }
    const uint32_t mant_odd = (x >> 13) & 1u;
    x += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (x >> 13));
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return detail::bits_float(sign);
      // subnormal: value = mant * 2^-24
      float v = static_cast<float>(mant) * detail::bits_float(0x33800000u);
      return sign ? -v : v;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16: the top 16 bits of a float32. Converts with round-to-nearest-even.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }  // NOLINT

  static BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }

  static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace kiln
