// Random ops (eager/ops/random.yaml), compiled once: PyTorch's argument checks,
// the draws from the generator, and the composite forms (factories, *_like,
// out=). The loops are in per_capability/RandomKernel.cpp and DistributionKernel.cpp;
// multinomial and randperm are in Distributions.cpp.
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/random/Random.h"

#include <cmath>
#include <limits>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/ResultInto.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(uniform_fill_fn, uniform_fill_stub);
KILN_DEFINE_DISPATCH(normal_fill_fn, normal_fill_stub);
KILN_DEFINE_DISPATCH(random_range_fill_fn, random_range_fill_stub);
KILN_DEFINE_DISPATCH(exponential_fill_fn, exponential_fill_stub);
KILN_DEFINE_DISPATCH(bernoulli_scalar_fill_fn, bernoulli_scalar_fill_stub);
KILN_DEFINE_DISPATCH(normal_affine_fn, normal_affine_stub);
KILN_DEFINE_DISPATCH(bernoulli_compare_fn, bernoulli_compare_stub);

// --- shared helpers (Random.h) -----------------------------------------------------

void draw_into(const Tensor& self, int words, const std::optional<Generator>& generator,
               FunctionRef<void(const RandomFill&)> fill) {
  check_no_internal_overlap(self);
  CpuGeneratorImpl& gen = cpu_generator_or_default(generator);
  const int64_t numel = self.numel();
  // A meta tensor draws nothing and leaves the generator where it is, as torch's (Note [Stubs skip meta tensors]).
  if (numel == 0 || self.impl()->is_meta()) return;
  const PhiloxInputs philox = gen.reserve(blocks_for(numel, words));
  if (self.is_contiguous()) {
    fill(RandomFill{self.data_ptr(), self.dtype(), numel, philox});
    self.impl()->bump_version();
    return;
  }
  const Tensor dense = empty(self.sizes(), self.dtype(), self.device());
  fill(RandomFill{dense.data_ptr(), dense.dtype(), numel, philox});
  kiln::copy_(self, dense);
}


void check_floating(DType dtype, const char* kernel) {
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype), "\"", kernel, "\" not implemented for '",
                             scalar_type_name(dtype), "'");
}

namespace {

/// The largest finite value of a floating dtype, as a double.
double floating_max(DType dtype) {
  switch (dtype) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

/// std::numeric_limits<T>::digits of a floating dtype.
int floating_digits(DType dtype) {
  switch (dtype) {
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    case DType::Float32: return 24;
    default: return 53;
  }
}

/// The range of an integral dtype as int64 (bool: 0 and 1).
std::pair<int64_t, int64_t> integral_bounds(DType dtype) {
  int64_t lowest = 0, highest = 1;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      lowest = static_cast<int64_t>(std::numeric_limits<T>::lowest());
      highest = static_cast<int64_t>(std::numeric_limits<T>::max());
    }
  });
  return {lowest, highest};
}

/// static_cast<int64_t>(static_cast<T>(v)) for the floating dtype T, with x86's
/// answer (INT64_MIN) where the value leaves int64's range.
int64_t round_through_dtype(int64_t v, DType dtype) {
  double d = 0;
  switch (dtype) {
    case DType::Float16: d = static_cast<float>(Half(static_cast<float>(v))); break;
    case DType::BFloat16: d = static_cast<float>(BFloat16(static_cast<float>(v))); break;
    case DType::Float32: d = static_cast<float>(v); break;
    default: d = static_cast<double>(v); break;
  }
  if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) return std::numeric_limits<int64_t>::lowest();
  return static_cast<int64_t>(d);
}

// PyTorch's update_from / update_to: move a bound of random_ on a floating
// dtype to the nearest value the dtype holds exactly, inside the range.
int64_t update_from(int64_t from, DType dtype) {
  const int digits = floating_digits(dtype);
  const int64_t from_plus_1 = round_through_dtype(from + 1, dtype);
  if (from_plus_1 < from) {
    int64_t from_ = std::abs(from + 1);
    int n = 0;
    while (from_ >>= 1) ++n;
    from = from_plus_1 + (int64_t{1} << (n - digits + 1));
  }
  return from;
}

int64_t update_to(int64_t to, DType dtype) {
  const int digits = floating_digits(dtype);
  const int64_t to_minus_1 = round_through_dtype(to - 1, dtype);
  if (to_minus_1 >= to) {
    int64_t to_ = std::abs(to - 1);
    int n = 0;
    while (to_ >>= 1) ++n;
    to = to_minus_1 - (int64_t{1} << (n - digits + 1));
  }
  return to;
}

/// PyTorch's check_from_to_in_range (with its precision warning for floats).
void check_from_to_in_range(int64_t from, int64_t to_inc, DType dtype) {
  if (is_floating_point(dtype)) {
    const double max = floating_max(dtype);
    KILN_CHECK(static_cast<double>(from) >= -max && static_cast<double>(from) <= max, "from is out of bounds for ",
               typemeta_name(dtype));
    KILN_CHECK(static_cast<double>(to_inc) >= -max && static_cast<double>(to_inc) <= max,
               "to - 1 is out of bounds for ", typemeta_name(dtype));
    const int digits = floating_digits(dtype);
    auto warn = [&](int64_t v, const char* name) {
      if (digits < 63 && (v < -(int64_t{1} << digits) || v > (int64_t{1} << digits))) {
        KILN_WARN(name, " is out of bounds [-(2^", digits, "), 2^", digits, "]. Due to precision limitations ",
                  typemeta_name(dtype), " can support discrete uniform distribution only within this range. This "
                  "warning will become an error in version 1.7 release, please fix the code in advance");
      }
    };
    warn(from, "from");
    warn(to_inc, "to - 1");
    return;
  }
  const auto [lowest, highest] = integral_bounds(dtype);
  KILN_CHECK(from >= lowest && from <= highest, "from is out of bounds for ", typemeta_name(dtype));
  KILN_CHECK(to_inc >= lowest && to_inc <= highest, "to - 1 is out of bounds for ", typemeta_name(dtype));
}

void fill_range(const Tensor& self, uint64_t range, int64_t base, const std::optional<Generator>& generator) {
  draw_into(self, range_words(range), generator,
            [&](const RandomFill& f) { random_range_fill_stub(f, range, base); });
}

/// Shapes `t` may expand to, with PyTorch's expand messages.
void check_expandable(const Tensor& t, IntArrayRef target) {
  const int64_t ndim = t.dim();
  const auto ntarget = static_cast<int64_t>(target.size());
  KILN_CHECK(ntarget >= ndim, "expand(kiln.", legacy_tensor_name(t.dtype()), "{", t.sizes(), "}, size=", target,
             "): the number of sizes provided (", ntarget, ") must be greater or equal to the number of dimensions in "
             "the tensor (", ndim, ")");
  for (int64_t i = ntarget - 1; i >= 0; --i) {
    const int64_t offset = ntarget - 1 - i;
    const int64_t dim = ndim - 1 - offset;
    const int64_t size = dim >= 0 ? t.size(dim) : 1;
    KILN_CHECK(size == 1 || size == target[static_cast<size_t>(i)], "The expanded size of the tensor (",
               target[static_cast<size_t>(i)], ") must match the existing size (", size,
               ") at non-singleton dimension ", i, ".  Target sizes: ", target, ".  Tensor sizes: ", t.sizes());
  }
}

/// "normal expects all elements of std >= 0.0" unless every std is >= 0 (NaN is not).
void check_normal_std_tensor(const Tensor& std) {
  if (std.numel() == 0 || std.impl()->is_meta()) return;  // meta: no values to check (as torch's meta kernel)
  const Tensor values = to_dtype_copy(std, DType::Float64);
  const double* v = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i) {
    KILN_CHECK(v[i] >= 0.0, "normal expects all elements of std >= 0.0");
  }
}

void check_normal_std(double std) { KILN_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std); }

/// out = z * std + mean in place over `out` (which holds standard normals z),
/// mean and std broadcast to out's shape (tensors or wrapped numbers).
void normal_affine(const Tensor& out, const Tensor& mean, const Tensor& std) {
  if (out.numel() == 0) return;
  auto iter = TensorIteratorConfig()
                  .set_op_name("normal")
                  .add_output(out)
                  .add_const_input(out)
                  .add_const_input(mean)
                  .add_const_input(std)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .resize_outputs(false)
                  .build();
  normal_affine_stub(iter);
}

}  // namespace

// --- in-place samplers ------------------------------------------------------------

Tensor uniform_cpu_(const Tensor& self, double from, double to, const std::optional<Generator>& generator) {
  if (is_complex(self.dtype())) {  // each part uniform in [from, to), as PyTorch
    uniform_cpu_(view_as_real_impl(self), from, to, generator);
    return self;
  }
  const DType dtype = self.dtype();
  check_floating(dtype, "check_uniform_bounds");
  const double max = floating_max(dtype);
  KILN_CHECK(from >= -max && from <= max, "from is out of bounds for ", typemeta_name(dtype));
  KILN_CHECK(to >= -max && to <= max, "to is out of bounds for ", typemeta_name(dtype));
  KILN_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  KILN_CHECK(to - from <= max, "uniform_ expects to-from <= std::numeric_limits<", scalar_type_name(dtype),
             ">::max(), but found to=", to, " and from=", from, " which result in to-from to exceed the limit");
  draw_into(self, float_words(dtype), generator, [&](const RandomFill& f) { uniform_fill_stub(f, from, to); });
  return self;
}

Tensor normal_cpu_(const Tensor& self, double mean, double std, const std::optional<Generator>& generator) {
  check_normal_std(std);
  if (is_complex(self.dtype())) {
    // Each part normal with std / sqrt(2), so |z - mean|^2 has expectation std^2 (PyTorch's complex normal).
    normal_cpu_(view_as_real_impl(self), mean, std / std::sqrt(2.0), generator);
    return self;
  }
  if (self.numel() == 0) return self;
  check_floating(self.dtype(), "normal_kernel_cpu");
  draw_into(self, float_words(self.dtype()), generator, [&](const RandomFill& f) { normal_fill_stub(f, mean, std); });
  return self;
}

Tensor random_from_cpu_(const Tensor& self, int64_t from, std::optional<int64_t> to,
                        const std::optional<Generator>& generator) {
  const DType dtype = self.dtype();
  if (to.has_value()) {  // [from, to)
    int64_t upper = *to;
    KILN_CHECK(from < upper, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", upper);
    if (is_floating_point(dtype)) {
      from = update_from(from, dtype);
      upper = update_to(upper, dtype);
      KILN_CHECK(from < upper, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got "
                 "from=", from, " >= to=", upper);
    }
    check_from_to_in_range(from, upper - 1, dtype);
    fill_range(self, static_cast<uint64_t>(upper) - static_cast<uint64_t>(from), from, generator);
    return self;
  }
  if (from != std::numeric_limits<int64_t>::lowest()) {  // [from, the dtype's largest integer]
    int64_t to_inc = 0;
    if (is_floating_point(dtype)) {
      to_inc = int64_t{1} << floating_digits(dtype);
      from = update_from(from, dtype);
      KILN_CHECK(from < to_inc, "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to "
                 "dtype, but got from=", from, " > to_inc=", to_inc);
    } else {
      to_inc = integral_bounds(dtype).second;
    }
    check_from_to_in_range(from, to_inc, dtype);
    fill_range(self, static_cast<uint64_t>(to_inc) - static_cast<uint64_t>(from) + 1, from, generator);
    return self;
  }
  fill_range(self, 0, 0, generator);  // every int64: [lowest, max], 2^64 values
  return self;
}

Tensor random_to_(const Tensor& self, int64_t to, const std::optional<Generator>& generator) {
  return ops::random__from::call(self, 0, to, generator);
}

Tensor random_cpu_(const Tensor& self, const std::optional<Generator>& generator) {
  // PyTorch's uniform_int: [0, 2^digits] for floats, [0, max] for integers, {0, 1} for bool.
  const DType dtype = self.dtype();
  uint64_t range = 2;
  if (is_floating_point(dtype)) {
    range = (uint64_t{1} << floating_digits(dtype)) + 1;
  } else if (dtype != DType::Bool) {
    range = static_cast<uint64_t>(integral_bounds(dtype).second) + 1;
  }
  fill_range(self, range, 0, generator);
  return self;
}

Tensor exponential_cpu_(const Tensor& self, double lambd, const std::optional<Generator>& generator) {
  KILN_CHECK(lambd > 0.0 && !std::isnan(lambd), "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  if (self.numel() == 0) return self;
  KILN_CHECK(is_floating_point(self.dtype()), "Exponential distribution is a continuous probability distribution. "
             "dtype must be a floating point but you specified ", scalar_type_name(self.dtype()));
  draw_into(self, float_words(self.dtype()), generator,
            [&](const RandomFill& f) { exponential_fill_stub(f, lambd); });
  return self;
}


Tensor bernoulli_tensor_cpu_(const Tensor& self, const Tensor& p, const std::optional<Generator>& generator) {
  check_no_internal_overlap(self);
  check_floating(p.dtype(), "bernoulli_tensor_cpu_p_");
  check_expandable(p, self.sizes());
  if (self.numel() == 0) return self;
  // One double uniform per element of self (row-major), compared with p.
  const Tensor u = empty(self.sizes(), DType::Float64, self.device());
  draw_into(u, 2, generator, [](const RandomFill& f) { uniform_fill_stub(f, 0.0, 1.0); });
  auto iter = TensorIteratorConfig()
                  .set_op_name("bernoulli_")
                  .add_output(self)
                  .add_const_input(u)
                  .add_const_input(p)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .resize_outputs(false)
                  .build();
  bool invalid_p = false;
  bernoulli_compare_stub(iter, invalid_p);
  self.impl()->bump_version();
  KILN_CHECK(!invalid_p, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
             "improved?  If so, please report an enhancement request to PyTorch.)");
  return self;
}

// --- bernoulli ----------------------------------------------------------------------
// The kernels of Note [Three ways to write a result]: bernoulli and bernoulli.out
// draw with the probabilities in self; bernoulli.p and bernoulli_.float with one p.

Tensor bernoulli_into(ResultInto into, const Tensor& out, const Tensor& self,
                      const std::optional<Generator>& generator) {
  if (into == ResultInto::Out) resize_output(out, self.sizes());
  const Tensor result = into == ResultInto::Out ? out : empty(self.sizes(), self.dtype(), self.device());
  return bernoulli_tensor_cpu_(result, self, generator);
}

Tensor bernoulli_p_into(ResultInto into, const Tensor& out, const Tensor& self, double p,
                        const std::optional<Generator>& generator) {
  KILN_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  const Tensor result = into == ResultInto::InPlace ? self : empty(self.sizes(), self.dtype(), self.device());
  draw_into(result, 1, generator, [&](const RandomFill& f) { bernoulli_scalar_fill_stub(f, p); });
  return result;
}

// --- normal with tensor parameters ----------------------------------------------------
// As PyTorch: the result has mean's (or std's) dtype, is contiguous, and holds
// z * std + mean for standard normals z drawn in its row-major order. The
// function form allocates; the out= form resizes `out` (normal.Tensor_float
// broadcasts mean with out's sizes there, as PyTorch does).

namespace {

Tensor normal_result(ResultInto into, const Tensor& out, IntArrayRef sizes, DType dtype, Device device) {
  if (into == ResultInto::Out) {
    resize_output(out, sizes);
    return out;
  }
  return empty(sizes, dtype, device);
}

Tensor draw_normal_affine(const Tensor& result, const Tensor& mean, const Tensor& std,
                          const std::optional<Generator>& generator) {
  normal_cpu_(result, 0.0, 1.0, generator);
  normal_affine(result, mean, std);
  return result;
}

}  // namespace

Tensor normal_tensor_tensor_into(ResultInto into, const Tensor& out, const Tensor& mean, const Tensor& std,
                                 const std::optional<Generator>& generator) {
  check_normal_std_tensor(std);
  const Tensor result =
      normal_result(into, out, broadcast_shapes(mean.sizes(), std.sizes()), mean.dtype(), mean.device());
  return draw_normal_affine(result, mean, std, generator);
}

Tensor normal_tensor_float_into(ResultInto into, const Tensor& out, const Tensor& mean, double std,
                                const std::optional<Generator>& generator) {
  check_normal_std(std);
  const Tensor result = into == ResultInto::Out
                            ? normal_result(into, out, broadcast_shapes(mean.sizes(), out.sizes()), mean.dtype(),
                                            mean.device())
                            : normal_result(into, out, mean.sizes(), mean.dtype(), mean.device());
  return draw_normal_affine(result, mean, wrapped_scalar_tensor(Scalar(std), result.device()), generator);
}

Tensor normal_float_tensor_into(ResultInto into, const Tensor& out, double mean, const Tensor& std,
                                const std::optional<Generator>& generator) {
  check_normal_std_tensor(std);
  const Tensor result = normal_result(into, out, std.sizes(), std.dtype(), std.device());
  return draw_normal_affine(result, wrapped_scalar_tensor(Scalar(mean), result.device()), std, generator);
}

// --- composites: factories, out= and *_like ------------------------------------------

Tensor normal_float_float(double mean, double std, IntArrayRef size, const std::optional<Generator>& generator,
                          std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::empty(size, dtype, device).normal_(mean, std, generator);
}

Tensor normal_float_float_out(double mean, double std, IntArrayRef size, const std::optional<Generator>& generator,
                              const Tensor& out) {
  resize_output(out, size);
  return out.normal_(mean, std, generator);
}

Tensor rand_generator(IntArrayRef size, const std::optional<Generator>& generator, std::optional<DType> dtype,
                      std::optional<Device> device) {
  return kiln::empty(size, dtype, device).uniform_(0.0, 1.0, generator);
}

Tensor rand(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return rand_generator(size, std::nullopt, dtype, device);
}

Tensor rand_generator_out(IntArrayRef size, const std::optional<Generator>& generator, const Tensor& out) {
  resize_output(out, size);
  return out.uniform_(0.0, 1.0, generator);
}

Tensor rand_out(IntArrayRef size, const Tensor& out) { return rand_generator_out(size, std::nullopt, out); }

Tensor randn_generator(IntArrayRef size, const std::optional<Generator>& generator, std::optional<DType> dtype,
                       std::optional<Device> device) {
  return kiln::empty(size, dtype, device).normal_(0.0, 1.0, generator);
}

Tensor randn(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return randn_generator(size, std::nullopt, dtype, device);
}

Tensor randn_generator_out(IntArrayRef size, const std::optional<Generator>& generator, const Tensor& out) {
  resize_output(out, size);
  return out.normal_(0.0, 1.0, generator);
}

Tensor randn_out(IntArrayRef size, const Tensor& out) { return randn_generator_out(size, std::nullopt, out); }

Tensor randint_low_generator(int64_t low, int64_t high, IntArrayRef size, const std::optional<Generator>& generator,
                             std::optional<DType> dtype, std::optional<Device> device) {
  const Tensor result = kiln::empty(size, dtype.value_or(DType::Int64), device);
  return ops::random__from::call(result, low, high, generator);
}

Tensor randint(int64_t high, IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return randint_low_generator(0, high, size, std::nullopt, dtype, device);
}

Tensor randint_generator(int64_t high, IntArrayRef size, const std::optional<Generator>& generator,
                         std::optional<DType> dtype, std::optional<Device> device) {
  return randint_low_generator(0, high, size, generator, dtype, device);
}

Tensor randint_low(int64_t low, int64_t high, IntArrayRef size, std::optional<DType> dtype,
                   std::optional<Device> device) {
  return randint_low_generator(low, high, size, std::nullopt, dtype, device);
}

Tensor randint_low_generator_out(int64_t low, int64_t high, IntArrayRef size,
                                 const std::optional<Generator>& generator, const Tensor& out) {
  resize_output(out, size);
  return ops::random__from::call(out, low, high, generator);
}

Tensor randint_out(int64_t high, IntArrayRef size, const Tensor& out) {
  return randint_low_generator_out(0, high, size, std::nullopt, out);
}

Tensor randint_generator_out(int64_t high, IntArrayRef size, const std::optional<Generator>& generator,
                             const Tensor& out) {
  return randint_low_generator_out(0, high, size, generator, out);
}

Tensor randint_low_out(int64_t low, int64_t high, IntArrayRef size, const Tensor& out) {
  return randint_low_generator_out(low, high, size, std::nullopt, out);
}

Tensor randperm_generator(int64_t n, const std::optional<Generator>& generator, std::optional<DType> dtype,
                          std::optional<Device> device) {
  const Tensor result = kiln::empty({n}, dtype.value_or(DType::Int64), device);
  return kiln::randperm_out(result, n, generator);
}

Tensor randperm(int64_t n, std::optional<DType> dtype, std::optional<Device> device) {
  return randperm_generator(n, std::nullopt, dtype, device);
}

Tensor randperm_out(int64_t n, const Tensor& out) { return kiln::randperm_out(out, n, std::nullopt); }

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement,
                   const std::optional<Generator>& generator) {
  const Tensor result = empty({0}, DType::Int64, self.device());
  return kiln::multinomial_out(result, self, num_samples, replacement, generator);
}

Tensor rand_like_generator(const Tensor& self, const std::optional<Generator>& generator, std::optional<DType> dtype,
                           std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  return kiln::empty_like(self, dtype, device, memory_format).uniform_(0.0, 1.0, generator);
}

Tensor rand_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                 std::optional<MemoryFormat> memory_format) {
  return rand_like_generator(self, std::nullopt, dtype, device, memory_format);
}

Tensor randn_like_generator(const Tensor& self, const std::optional<Generator>& generator, std::optional<DType> dtype,
                            std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  return kiln::empty_like(self, dtype, device, memory_format).normal_(0.0, 1.0, generator);
}

Tensor randn_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                  std::optional<MemoryFormat> memory_format) {
  return randn_like_generator(self, std::nullopt, dtype, device, memory_format);
}

Tensor randint_like_low_generator_dtype(const Tensor& self, int64_t low, int64_t high,
                                        const std::optional<Generator>& generator, std::optional<DType> dtype,
                                        std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  const Tensor result = kiln::empty_like(self, dtype, device, memory_format);
  return ops::random__from::call(result, low, high, generator);
}

Tensor randint_like_low_dtype(const Tensor& self, int64_t low, int64_t high, std::optional<DType> dtype,
                              std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  return randint_like_low_generator_dtype(self, low, high, std::nullopt, dtype, device, memory_format);
}

Tensor randint_like_generator(const Tensor& self, int64_t high, const std::optional<Generator>& generator,
                              std::optional<DType> dtype, std::optional<Device> device,
                              std::optional<MemoryFormat> memory_format) {
  return randint_like_low_generator_dtype(self, 0, high, generator, dtype, device, memory_format);
}

Tensor randint_like(const Tensor& self, int64_t high, std::optional<DType> dtype, std::optional<Device> device,
                    std::optional<MemoryFormat> memory_format) {
  return randint_like_low_generator_dtype(self, 0, high, std::nullopt, dtype, device, memory_format);
}

Tensor randint_like_tensor_generator(const Tensor& self, const Tensor& high, const std::optional<Generator>& generator,
                                     std::optional<DType> dtype, std::optional<Device> device,
                                     std::optional<MemoryFormat> memory_format) {
  KILN_CHECK(high.numel() == 1 && high.dim() == 0 && high.device().is_cpu(), "high must be a scalar tensor and on CPU");
  const int64_t high_value = to_dtype_copy(high, DType::Int64).data_ptr<int64_t>()[0];
  return randint_like_low_generator_dtype(self, 0, high_value, generator, dtype, device, memory_format);
}

Tensor randint_like_tensor(const Tensor& self, const Tensor& high, std::optional<DType> dtype,
                           std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  return randint_like_tensor_generator(self, high, std::nullopt, dtype, device, memory_format);
}

}  // namespace kiln::native
