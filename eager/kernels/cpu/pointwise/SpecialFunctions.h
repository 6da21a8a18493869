// Scalar special functions the pointwise kernels need and libm lacks:
// digamma, trigamma, the Hurwitz zeta function and polygamma, and nextafter
// for any IEEE binary format (float16 and bfloat16 step in their own bits).
// Templates over float and double, header-only so each CPU capability's
// kernels inline them (per_capability/SpecialOpsKernel.cpp).
//
// Note [Special functions and PyTorch's edge values]
// --------------------------------------------------
// The formulas are the textbook ones (reflection, recurrence to a large
// argument, then the asymptotic series in Bernoulli numbers), arranged so the
// values at the poles and signed zeros are PyTorch's: digamma(+0) = -inf,
// digamma(-0) = +inf, digamma(negative integer) = NaN; trigamma at a pole is
// +inf (or the huge finite value the reflection gives where sin(pi x) is
// not exactly 0, as PyTorch's does: polygamma(1, -1) is 1.29e15 in float32);
// polygamma(n >= 2, pole) = (-1)^(n+1) inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::native::special {

template <typename T>
inline constexpr T kPi = static_cast<T>(3.14159265358979323846);

/// psi(x) = d/dx log Gamma(x).
template <typename T>
T digamma(T x) {
  if (x == T(0)) return std::copysign(std::numeric_limits<T>::infinity(), -x);
  T result = 0;
  if (x < T(0)) {
    if (x == std::trunc(x)) return std::numeric_limits<T>::quiet_NaN();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan via the fractional part keeps pi x small.
    const T frac = x - std::trunc(x);
    result = -kPi<T> / std::tan(kPi<T> * frac);
    x = T(1) - x;
  }
  while (x < T(10)) {
    result -= T(1) / x;
    x += T(1);
  }
  if (x == T(10)) return result + static_cast<T>(2.25175258906672110764);  // psi(10)
  // psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k)
  const T y = T(1) / (x * x);
  const T series =
      y * (T(1.0 / 12) -
           y * (T(1.0 / 120) -
                y * (T(1.0 / 252) - y * (T(1.0 / 240) - y * (T(1.0 / 132) - y * (T(691.0 / 32760) - y * T(1.0 / 12)))))));
  return result + std::log(x) - T(0.5) / x - series;
}

/// psi'(x), the first derivative of digamma.
template <typename T>
T trigamma(T x) {
  T sign = 1;
  T result = 0;
  if (x < T(0.5)) {
    // psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)
    sign = -1;
    const T s = std::sin(kPi<T> * x);
    result -= kPi<T> * kPi<T> / (s * s);
    x = T(1) - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += T(1) / (x * x);
    x += T(1);
  }
  // psi'(x) ~ 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7)
  const T ixx = T(1) / (x * x);
  result += (T(1) + T(1) / (T(2) * x) + ixx * (T(1.0 / 6) - ixx * (T(1.0 / 30) - ixx * T(1.0 / 42)))) / x;
  return sign * result;
}

/// The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for s > 1: the sum
/// up to a large q + k, then Euler-Maclaurin's tail in Bernoulli numbers.
template <typename T>
T hurwitz_zeta(T s, T q) {
  if (s == T(1)) return std::numeric_limits<T>::infinity();
  if (s < T(1)) return std::numeric_limits<T>::quiet_NaN();
  if (q <= T(0)) {
    if (q == std::floor(q)) return std::numeric_limits<T>::infinity();
    if (s != std::floor(s)) return std::numeric_limits<T>::quiet_NaN();  // q^-s undefined
  }
  const T eps = std::numeric_limits<T>::epsilon();
  T sum = std::pow(q, -s);
  T a = q;
  int i = 0;
  while (i < 9 || a <= T(9)) {
    ++i;
    a += T(1);
    const T term = std::pow(a, -s);
    sum += term;
    if (std::fabs(term / sum) < eps) return sum;
  }
  // Tail: a^(1-s)/(s-1) - a^-s/2 + sum_j B_2j / (2j)! * s (s+1) ... (s+2j-2) a^(-s-2j+1).
  // (The first term a^-s was already added above, hence -1/2 rather than +1/2.)
  // B_2j / (2j)! for j = 1..12.
  static constexpr double kB2jOverFactorial[] = {
      8.333333333333333e-02, -1.388888888888889e-03, 3.306878306878307e-05,  -8.267195767195768e-07,
      2.08767569878681e-08,  -5.284190138687493e-10, 1.3382536530684679e-11, -3.3896802963225827e-13,
      8.586062056277845e-15, -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19,
  };
  const T a_to_minus_s = std::pow(a, -s);
  sum += a * a_to_minus_s / (s - T(1)) - T(0.5) * a_to_minus_s;
  T rising = s;                 // s (s+1) ... (s+2j-2)
  T power = a_to_minus_s / a;   // a^(-s-2j+1)
  for (int j = 0; j < 12; ++j) {
    const T term = static_cast<T>(kB2jOverFactorial[j]) * rising * power;
    sum += term;
    if (std::fabs(term / sum) < eps) break;
    rising *= (s + T(2 * j + 1)) * (s + T(2 * j + 2));
    power /= a * a;
  }
  return sum;
}

/// psi^(n)(x) for n >= 0: digamma, trigamma, then (-1)^(n+1) n! zeta(n + 1, x).
template <typename T>
T polygamma(int64_t n, T x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  // n! overflows T by n = 171 (double) or 35 (float): stop there, or a huge n
  // (polygamma(2**62, x)) would loop for centuries.
  T factorial = 1;
  for (int64_t k = 2; k <= n && std::isfinite(factorial); ++k) factorial *= static_cast<T>(k);
  const T sign = (n % 2 == 1) ? T(1) : T(-1);
  return sign * factorial * hurwitz_zeta(static_cast<T>(n + 1), x);
}

/// The next representable value after `from` towards `to`, for an IEEE
/// binary format stored in `Bits` (float16 and bfloat16 in uint16_t): one
/// step of the magnitude's bit pattern, as C's nextafter does for float.
template <typename Bits>
Bits nextafter_bits(Bits from, Bits to, bool from_is_nan, bool to_is_nan, bool equal, bool from_is_zero,
                    bool towards_larger) {
  constexpr Bits kSign = static_cast<Bits>(Bits(1) << (sizeof(Bits) * 8 - 1));
  if (from_is_nan) return from;
  if (to_is_nan) return to;
  if (equal) return to;
  if (from_is_zero) return static_cast<Bits>((to & kSign) | Bits(1));  // the smallest subnormal, to's sign
  const bool negative = (from & kSign) != 0;
  // Moving away from zero grows the magnitude's bits; towards zero shrinks them.
  return (towards_larger != negative) ? static_cast<Bits>(from + 1) : static_cast<Bits>(from - 1);
}

}  // namespace kiln::native::special
