// multinomial and randperm (eager/ops/random.yaml): PyTorch's checks and
// algorithms, on numbers drawn in bulk from the Philox stream first, so the
// results do not depend on the thread count (the per-row work is parallel,
// the draws are not consumed in a thread-dependent order).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/random/Random.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// Sets `out`'s shape as PyTorch's resize_ does (no warning; strides kept when the shape is already right).
void resize_exact(const Tensor& out, IntArrayRef shape) {
  if (!std::equal(shape.begin(), shape.end(), out.sizes().begin(), out.sizes().end())) out.impl()->resize(shape);
}

/// A contiguous float64 copy of `t` (its values, row-major).
std::vector<double> as_doubles(const Tensor& t) {
  const Tensor d = to_dtype_copy(t, DType::Float64);
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

/// `count` draws (row-major), each a double made by `fill` from 2 words.
std::vector<double> draw_doubles(int64_t count, const std::optional<Generator>& generator,
                                 FunctionRef<void(const RandomFill&)> fill) {
  const Tensor t = empty({count}, DType::Float64);
  draw_into(t, 2, generator, fill);
  const double* p = t.data_ptr<double>();
  return std::vector<double>(p, p + count);
}

// PyTorch's "fast path" (no replacement, or one sample): the Gumbel-max trick
// in exponential form, s = top-k of p / q with q ~ Exp(1) per category.
void multinomial_by_exponential_keys(const std::vector<double>& probs, int64_t n_dist, int64_t n_categories,
                                     int64_t n_sample, const std::optional<Generator>& generator, int64_t* out,
                                     int64_t out_stride0, int64_t out_stride1) {
  double max = -INFINITY, min = INFINITY;
  for (double p : probs) {
    max = std::isnan(p) || std::isnan(max) ? NAN : std::max(max, p);
    min = std::isnan(p) || std::isnan(min) ? NAN : std::min(min, p);
  }
  KILN_CHECK(max < INFINITY && min >= 0, "probability tensor contains either `inf`, `nan` or element < 0");
  for (int64_t i = 0; i < n_dist; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < n_categories; ++j) sum += probs[static_cast<size_t>(i * n_categories + j)];
    KILN_CHECK(sum != 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  const std::vector<double> q = draw_doubles(n_dist * n_categories, generator,
                                             [](const RandomFill& f) { exponential_fill_stub(f, 1.0); });
  parallel_for(0, n_dist, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n_categories, 1)),
               [&](int64_t begin, int64_t end) {
                 std::vector<int64_t> order(static_cast<size_t>(n_categories));
                 std::vector<double> keys(static_cast<size_t>(n_categories));
                 for (int64_t i = begin; i < end; ++i) {
                   for (int64_t j = 0; j < n_categories; ++j) {
                     const auto k = static_cast<size_t>(i * n_categories + j);
                     keys[static_cast<size_t>(j)] = probs[k] / q[k];
                   }
                   std::iota(order.begin(), order.end(), int64_t{0});
                   // The n_sample largest keys, largest first; ties go to the lower index.
                   std::partial_sort(order.begin(), order.begin() + n_sample, order.end(), [&](int64_t a, int64_t b) {
                     const double ka = keys[static_cast<size_t>(a)], kb = keys[static_cast<size_t>(b)];
                     return ka > kb || (ka == kb && a < b);
                   });
                   for (int64_t s = 0; s < n_sample; ++s) out[i * out_stride0 + s * out_stride1] = order[static_cast<size_t>(s)];
                 }
               });
}

// PyTorch's multinomial_with_replacement: the normalised cumulative
// distribution of each row, searched for one uniform per sample.
void multinomial_with_replacement(const std::vector<double>& probs, int64_t n_dist, int64_t n_categories,
                                  int64_t n_sample, const std::optional<Generator>& generator, int64_t* out,
                                  int64_t out_stride0, int64_t out_stride1) {
  std::vector<double> cumulative(probs.size());
  for (int64_t i = 0; i < n_dist; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < n_categories; ++j) {
      const auto k = static_cast<size_t>(i * n_categories + j);
      KILN_CHECK(probs[k] >= 0, "invalid multinomial distribution (encountering probability entry < 0)");
      KILN_CHECK(std::isfinite(probs[k]),
                 "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
      sum += probs[k];
      cumulative[k] = sum;
    }
    KILN_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
    for (int64_t j = 0; j < n_categories; ++j) cumulative[static_cast<size_t>(i * n_categories + j)] /= sum;
    cumulative[static_cast<size_t>(i * n_categories + n_categories - 1)] = 1.0;  // exactly, against rounding
  }
  const std::vector<double> u = draw_doubles(n_dist * n_sample, generator,
                                             [](const RandomFill& f) { uniform_fill_stub(f, 0.0, 1.0); });
  parallel_for(0, n_dist * n_sample, kGrainSize / 16, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i = k / n_sample, s = k % n_sample;
      const double* row = cumulative.data() + i * n_categories;
      // The first category whose cumulative probability exceeds u (never one of probability 0).
      const int64_t slot = std::upper_bound(row, row + n_categories, u[static_cast<size_t>(k)]) - row;
      out[i * out_stride0 + s * out_stride1] = std::min(slot, n_categories - 1);
    }
  });
}

}  // namespace

Tensor multinomial_out_cpu(const Tensor& self, int64_t n_sample, bool replacement,
                           const std::optional<Generator>& generator, const Tensor& out) {
  KILN_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  KILN_CHECK(is_floating_point(self.dtype()), "multinomial only supports floating-point dtypes for input, got: ",
             scalar_type_name(self.dtype()));
  KILN_CHECK(out.dtype() == DType::Int64, "multinomial expects Long tensor out, got: ", scalar_type_name(out.dtype()));
  KILN_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.size(-1);
  KILN_CHECK(replacement || n_sample <= n_categories,
             "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  KILN_CHECK(n_categories <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
  check_no_internal_overlap(out);
  const int64_t n_dist = self.dim() == 1 ? 1 : self.size(0);
  if (self.dim() == 1) {
    resize_exact(out, {n_sample});
  } else {
    resize_exact(out, {n_dist, n_sample});
  }
  // meta: the checks above are the meta function (the probabilities' values are checked where they are read)
  if (out.numel() == 0 || out.impl()->is_meta()) return out;
  const std::vector<double> probs = as_doubles(self);
  int64_t* data = out.data_ptr<int64_t>();
  const int64_t stride0 = self.dim() == 1 ? 0 : out.stride(0);
  const int64_t stride1 = out.stride(-1);
  if (!replacement || n_sample == 1) {
    multinomial_by_exponential_keys(probs, n_dist, n_categories, n_sample, generator, data, stride0, stride1);
  } else {
    multinomial_with_replacement(probs, n_dist, n_categories, n_sample, generator, data, stride0, stride1);
  }
  out.impl()->bump_version();
  return out;
}

Tensor randperm_generator_out_cpu(int64_t n, const std::optional<Generator>& generator, const Tensor& out) {
  KILN_CHECK(n >= 0, "n must be non-negative, got", n);
  const DType dtype = out.dtype();
  // PyTorch's check_supported_max_int_with_precision: n - 1 must fit, exactly for floats.
  KILN_CHECK(!overflows(Scalar(n > 0 ? n - 1 : n), dtype), "value cannot be converted to type ", cpp_type_name(dtype),
             " without overflow");
  KILN_CHECK(dtype != DType::Float16 || n <= (int64_t{1} << 11) + 1, "n cannot be greater than 2049 for Half type.");
  KILN_CHECK(dtype != DType::Float32 || n <= (int64_t{1} << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
  KILN_CHECK(dtype != DType::Float64 || n <= (int64_t{1} << 53) + 1,
             "n cannot be greater than 2^53+1 for Double type.");
  KILN_CHECK_NOT_IMPLEMENTED(dtype != DType::Bool, "\"randperm\" not implemented for 'Bool'");
  resize_exact(out, {n});
  // Fisher-Yates, PyTorch's order of swaps, with position i's 64-bit draw from the stream.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  if (n > 1) {
    const Tensor keys = empty({n - 1}, DType::Int64);
    draw_into(keys, 2, generator, [](const RandomFill& f) { random_range_fill_stub(f, 0, 0); });
    const auto* key = reinterpret_cast<const uint64_t*>(keys.data_ptr<int64_t>());
    for (int64_t i = 0; i < n - 1; ++i) {
      const auto z = static_cast<int64_t>(key[i] % static_cast<uint64_t>(n - i));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(i + z)]);
    }
  } else {
    (void)cpu_generator_or_default(generator);  // a generator of another device is still an error
  }
  const Tensor values = empty({n}, DType::Int64);
  std::copy(perm.begin(), perm.end(), values.data_ptr<int64_t>());
  kiln::copy_(out, values);
  return out;
}

}  // namespace kiln::native
