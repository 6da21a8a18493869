// Helpers the neural-network loops share (SoftmaxKernel.cpp, LossKernel.cpp,
// NormKernel.cpp, ...): horizontal max/sum of a Vec, loads of a partial vector
// padded with a chosen value, and widening/narrowing of a contiguous run of
// elements to the type a loop computes in. Only for files compiled per CPU
// capability.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "eager/core/Half.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/vec/Vec.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native::KILN_CPU_NS {

/// Sum of a Vec's lanes, left to right.
template <typename A>
A hsum(Vec<A> v) {
  A lanes[Vec<A>::size];
  v.storeu(lanes);
  A s = 0;
  for (int64_t i = 0; i < Vec<A>::size; ++i) s += lanes[i];
  return s;
}

/// Largest of a Vec's lanes (NaN lanes ignored; callers see NaN through the sums).
template <typename A>
A hmax(Vec<A> v) {
  A lanes[Vec<A>::size];
  v.storeu(lanes);
  A m = lanes[0];
  for (int64_t i = 1; i < Vec<A>::size; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

/// `count` <= size elements from p, the other lanes set to `pad`.
template <typename A>
Vec<A> load_padded(const A* p, int64_t count, A pad) {
  Vec<A> r = Vec<A>::splat(pad);
  std::memcpy(&r.v, p, static_cast<size_t>(count) * sizeof(A));
  return r;
}

/// `w` <= size elements from p (a whole vector when w is size).
template <typename A>
Vec<A> load(const A* p, int64_t w) {
  return w == Vec<A>::size ? Vec<A>::loadu(p) : Vec<A>::loadu(p, w);
}

/// The first `w` <= size lanes of v to p.
template <typename A>
void store(Vec<A> v, A* p, int64_t w) {
  if (w == Vec<A>::size) {
    v.storeu(p);
  } else {
    v.storeu(p, w);
  }
}

template <typename A>
inline constexpr A kNegInf = -std::numeric_limits<A>::infinity();

/// The sum over [0, n) of fn(i, count), a Vec (or a VecPair) per chunk of
/// `count` <= size elements, on four accumulators so consecutive adds do not
/// wait on each other: with one chain a row is capped at an add's latency per
/// vector. The order of the adds depends only on n.
template <typename A, typename Fn>
auto sum_chunks(int64_t n, const Fn& fn) {
  using Acc = decltype(fn(int64_t{0}, int64_t{0}));
  constexpr int64_t W = Vec<A>::size;
  Acc a0{}, a1{}, a2{}, a3{};  // value-initialised: zero lanes
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    a0 = a0 + fn(i, W);
    a1 = a1 + fn(i + W, W);
    a2 = a2 + fn(i + 2 * W, W);
    a3 = a3 + fn(i + 3 * W, W);
  }
  for (; i + W <= n; i += W) a0 = a0 + fn(i, W);
  if (i < n) a1 = a1 + fn(i, n - i);
  return (a0 + a1) + (a2 + a3);
}

/// Two sums carried together through sum_chunks.
template <typename A>
struct VecPair {
  Vec<A> first, second;
  friend VecPair operator+(VecPair a, VecPair b) { return {a.first + b.first, a.second + b.second}; }
};

/// Largest of x[0, n) (NaN ignored, as hmax); -inf for n == 0. Four
/// accumulators, as sum_chunks.
template <typename A>
A row_max(const A* x, int64_t n) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  V m0 = V::splat(kNegInf<A>), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    m0 = maximum(m0, V::loadu(x + i));
    m1 = maximum(m1, V::loadu(x + i + W));
    m2 = maximum(m2, V::loadu(x + i + 2 * W));
    m3 = maximum(m3, V::loadu(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) m0 = maximum(m0, V::loadu(x + i));
  if (i < n) m1 = maximum(m1, load_padded(x + i, n - i, kNegInf<A>));
  return hmax(maximum(maximum(m0, m1), maximum(m2, m3)));
}

/// Copies n elements of type S to type D (widening float16/bfloat16 to float, or back).
template <typename D, typename S>
void convert_run(const S* src, D* dst, int64_t n) {
  if constexpr (std::is_same_v<D, S>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(S));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert_element<D>(src[i]);
  }
}

/// A pointer to n elements of src as A: src itself when S is A, else a widened copy in `buffer`.
template <typename A, typename S>
const A* as_compute_type(const S* src, int64_t n, std::vector<A>& buffer) {
  if constexpr (std::is_same_v<A, S>) {
    return src;
  } else {
    buffer.resize(static_cast<size_t>(n));
    convert_run(src, buffer.data(), n);
    return buffer.data();
  }
}

/// Where to write n results of type A bound for dst of type D: dst itself when D is A, else `buffer`.
template <typename A, typename D>
A* compute_target(D* dst, int64_t n, std::vector<A>& buffer) {
  if constexpr (std::is_same_v<A, D>) {
    return dst;
  } else {
    buffer.resize(static_cast<size_t>(n));
    return buffer.data();
  }
}

/// Copies results from compute_target's buffer into dst when they were not written there directly.
template <typename A, typename D>
void finish_target(const A* computed, D* dst, int64_t n) {
  if constexpr (!std::is_same_v<A, D>) convert_run(computed, dst, n);
}

/// Runs fn(tag) for the floating dtypes only (float, double, float16, bfloat16).
template <typename Fn>
void visit_floating(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    case DType::Float16: fn(Half{}); return;
    case DType::BFloat16: fn(BFloat16{}); return;
    default: return;
  }
}

}  // namespace kiln::native::KILN_CPU_NS
