// Dispatch stubs of the random kernels (defined per capability in
// eager/kernels/cpu/random/per_capability/RandomKernel.cpp and DistributionKernel.cpp), and
// the word counts both sides must agree on. See Note [Random groups]
// (eager/kernels/random/Philox.h).
#pragma once

#include <cstdint>

#include "eager/core/DType.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/random/Generator.h"
#include "eager/kernels/random/Philox.h"

namespace kiln::native {

/// A dense run of `numel` elements of `dtype` at `data`, filled from the
/// Philox stream at `philox` (elements in Note [Random groups] order).
struct RandomFill {
  void* data;
  DType dtype;
  int64_t numel;
  PhiloxInputs philox;
};

/// 32-bit words each element consumes: 2 for 64-bit floats, 1 for the others.
[[nodiscard]] constexpr int float_words(DType dtype) { return dtype == DType::Float64 ? 2 : 1; }
/// Words for an integer draw over `range` values (0: all 2^64): 2 above 2^32, as PyTorch.
[[nodiscard]] constexpr int range_words(uint64_t range) { return range == 0 || range > (uint64_t{1} << 32) ? 2 : 1; }
/// Philox blocks an op filling `numel` elements of `words` words each reserves.
[[nodiscard]] constexpr uint64_t blocks_for(int64_t numel, int words) {
  const int64_t per_group = random::group_elements(words);
  return static_cast<uint64_t>((numel + per_group - 1) / per_group) * random::kGroupBlocks;
}

/// from + (to - from) * u, u uniform in [0, 1) on the dtype's mantissa (float_words).
using uniform_fill_fn = void (*)(const RandomFill& fill, double from, double to);
/// mean + std * z, z standard normal by Box-Muller (float_words).
using normal_fill_fn = void (*)(const RandomFill& fill, double mean, double std);
/// base + (x mod range) for a random integer x of range_words(range) words; range 0 is
/// the whole 64-bit range (x itself). Float outputs receive the integer's value.
using random_range_fill_fn = void (*)(const RandomFill& fill, uint64_t range, int64_t base);
/// -log(u) / lambda, u uniform in (0, 1) (float_words): never 0, never inf.
using exponential_fill_fn = void (*)(const RandomFill& fill, double lambda);
/// 1 where u < p, else 0, u = x / 2^32 for one word x per element.
using bernoulli_scalar_fill_fn = void (*)(const RandomFill& fill, double p);

KILN_DECLARE_DISPATCH(uniform_fill_fn, uniform_fill_stub);
KILN_DECLARE_DISPATCH(normal_fill_fn, normal_fill_stub);
KILN_DECLARE_DISPATCH(random_range_fill_fn, random_range_fill_stub);
KILN_DECLARE_DISPATCH(exponential_fill_fn, exponential_fill_stub);
KILN_DECLARE_DISPATCH(bernoulli_scalar_fill_fn, bernoulli_scalar_fill_stub);

// TensorIterator transforms of drawn numbers (DistributionKernel.cpp), in the
// iterator's common dtype:
/// out = mean + std * z over (out, z, mean, std).
using normal_affine_fn = void (*)(TensorIterator& iter);
/// out = u < p ? 1 : 0 over (out, u, p), in double; sets `invalid_p` when a p is
/// outside [0, 1] (the caller raises).
using bernoulli_compare_fn = void (*)(TensorIterator& iter, bool& invalid_p);

KILN_DECLARE_DISPATCH(normal_affine_fn, normal_affine_stub);
KILN_DECLARE_DISPATCH(bernoulli_compare_fn, bernoulli_compare_stub);

}  // namespace kiln::native
