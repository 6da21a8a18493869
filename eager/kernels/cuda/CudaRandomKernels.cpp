// The CUDA random kernels: bernoulli_ with one p (dropout's keep-mask:
// native_dropout and dropout are composites of bernoulli_ and mul, Note
// [Dropout is composite] in eager/kernels/cpu/nn/DropoutOps.cpp), uniform_ and normal_.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "eager/core/Error.h"
#include "eager/core/Half.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/RandomKernelSources.h"
#include "eager/kernels/random/Generator.h"
#include "eager/kernels/random/Philox.h"

namespace kiln::native {

// Note [CUDA random numbers]
// --------------------------
// kiln has one random stream per generator, whatever the device: a CUDA
// random op reserves its Philox blocks from the same CPU generator object a
// CPU op would (the `generator` argument, else kiln's default generator, which
// kiln.manual_seed seeds), and its kernel computes every element's words from
// (seed, offset, element index) exactly as the CPU kernels do (Note [Random
// groups], eager/kernels/random/Philox.h, the same Philox4x32-10 in
// RandomKernelSources.cpp). So:
//   * reproducible: manual_seed(s) replays the same CUDA tensors, and
//     get_state()/set_state() replay them too (the state is (seed, offset));
//   * one sequence: a CUDA draw advances the offset exactly as a CPU draw of
//     the same size would, so mixing devices never reuses blocks;
//   * equal numbers: bernoulli (dropout's mask) and the [0, 1) uniforms are
//     bit-identical to the CPU's for the same (seed, offset) (integer tests on
//     the same words), and uniform_ in float rounds as the CPU's may differ in
//     the last ulp where one side contracts a * b + c into an FMA; normal_ pairs the same
//     uniforms by Box-Muller, its log/sqrt/sin/cos CUDA's libdevice rather than SLEEF, so
//     its values agree with the CPU's to a few ulps.
// torch instead keeps a separate Philox generator per CUDA device; kiln has no
// CUDA generator object, so a torch-style `generator=` of device cuda is
// refused (cpu_generator_or_default's error) and a CPU Generator is accepted.
// The kernel is queued on the current stream; the reservation happens on the
// host when the op is called, so stream order never changes which numbers an
// op gets.

namespace {

/// The Philox inputs for `numel` elements of `words` words each, reserved from the generator.
PhiloxInputs reserve_for(const std::optional<Generator>& generator, int64_t numel, int words) {
  CpuGeneratorImpl& gen = cpu_generator_or_default(generator);
  const int64_t per_group = random::group_elements(words);
  const auto blocks = static_cast<uint64_t>((numel + per_group - 1) / per_group) * random::kGroupBlocks;
  return gen.reserve(blocks);
}

/// Runs `kernel` over a contiguous tensor with self's values, then copies back when self is not contiguous.
template <typename Launch>
Tensor draw_into_cuda(const Tensor& self, const Launch& launch) {
  check_no_internal_overlap(self);
  if (self.numel() == 0) return self;
  cuda::DeviceGuard guard(cuda_kernels::device_of(self));
  const Tensor dense = self.is_contiguous() ? self : kiln::empty(self.sizes(), self.dtype(), self.device());
  launch(dense);
  if (!dense.is_same(self)) cuda_copy(self, dense, false);
  self.impl()->bump_version();
  return self;
}

Tensor bernoulli_scalar_cuda_(const Tensor& self, double p, const std::optional<Generator>& generator) {
  KILN_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  cuda_kernels::check_kernel_dtype(self.dtype(), "bernoulli_");
  return draw_into_cuda(self, [&](const Tensor& out) {
    const PhiloxInputs philox = reserve_for(generator, out.numel(), 1);
    const random::BernoulliThreshold test = random::bernoulli_threshold(p);
    void* op = out.data_ptr();
    long long n = out.numel();
    unsigned long long seed = philox.seed;
    unsigned long long offset = philox.offset;
    unsigned threshold = test.threshold;
    int always = test.always ? 1 : 0;
    // A thread per Philox block: 16 blocks per 64 elements.
    cuda_kernels::launch_elementwise(cuda_kernels::bernoulli_kernel(out.dtype()), cuda_kernels::device_of(out),
                                     (n + 63) / 64 * 16, {&op, &n, &seed, &offset, &threshold, &always});
  });
}

Tensor bernoulli_p_cuda(const Tensor& self, double p, const std::optional<Generator>& generator) {
  return bernoulli_scalar_cuda_(kiln::empty(self.sizes(), self.dtype(), self.device()), p, generator);
}

double floating_max(DType dtype) {
  switch (dtype) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

/// `v` rounded to `dtype` and back, as the CPU kernel reads from and to (static_cast<T>).
double rounded(double v, DType dtype) {
  switch (dtype) {
    case DType::Float16: return static_cast<float>(static_cast<Half>(v));
    case DType::BFloat16: return static_cast<float>(static_cast<BFloat16>(v));
    case DType::Float32: return static_cast<float>(v);
    default: return v;
  }
}

Tensor uniform_cuda_(const Tensor& self, double from, double to, const std::optional<Generator>& generator) {
  const DType dtype = self.dtype();
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(dtype), "\"check_uniform_bounds\" not implemented for '",
                             scalar_type_name(dtype), "'");
  const double max = floating_max(dtype);
  KILN_CHECK(from >= -max && from <= max, "from is out of bounds for ", scalar_type_name(dtype));
  KILN_CHECK(to >= -max && to <= max, "to is out of bounds for ", scalar_type_name(dtype));
  KILN_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return draw_into_cuda(self, [&](const Tensor& out) {
    const bool wide = dtype == DType::Float64;
    const PhiloxInputs philox = reserve_for(generator, out.numel(), wide ? 2 : 1);
    void* op = out.data_ptr();
    long long n = out.numel();
    unsigned long long seed = philox.seed;
    unsigned long long offset = philox.offset;
    const int device = cuda_kernels::device_of(out);
    if (wide) {
      double f = from;
      double range = to - from;
      cuda_kernels::launch_elementwise(cuda_kernels::uniform_kernel(dtype), device, (n + 31) / 32 * 16,
                                       {&op, &n, &seed, &offset, &f, &range});
      return;
    }
    // In float from the dtype's from, to and to - from, as the CPU kernel (PyTorch's dist_acctype).
    float f = static_cast<float>(rounded(from, dtype));
    float range = static_cast<float>(rounded(static_cast<double>(static_cast<float>(rounded(to, dtype)) - f), dtype));
    cuda_kernels::launch_elementwise(cuda_kernels::uniform_kernel(dtype), device, (n + 63) / 64 * 16,
                                     {&op, &n, &seed, &offset, &f, &range});
  });
}

Tensor normal_cuda_(const Tensor& self, double mean, double std, const std::optional<Generator>& generator) {
  KILN_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return self;
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(self.dtype()), "\"normal_kernel_cuda\" not implemented for '",
                             scalar_type_name(self.dtype()), "'");
  return draw_into_cuda(self, [&](const Tensor& out) {
    const bool wide = out.dtype() == DType::Float64;
    const PhiloxInputs philox = reserve_for(generator, out.numel(), wide ? 2 : 1);
    void* op = out.data_ptr();
    long long n = out.numel();
    unsigned long long seed = philox.seed;
    unsigned long long offset = philox.offset;
    const int device = cuda_kernels::device_of(out);
    const cuda_kernels::KernelInstance kernel = cuda_kernels::normal_kernel(out.dtype());
    if (wide) {
      double m = mean;
      double s = std;
      cuda_kernels::launch_elementwise(kernel, device, (n + 31) / 32 * 16, {&op, &n, &seed, &offset, &m, &s});
      return;
    }
    float m = static_cast<float>(mean);
    float s = static_cast<float>(std);
    cuda_kernels::launch_elementwise(kernel, device, (n + 63) / 64 * 16, {&op, &n, &seed, &offset, &m, &s});
  });
}

}  // namespace

void register_cuda_random_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("bernoulli_.float", &bernoulli_scalar_cuda_);
  lib->impl("bernoulli.p", &bernoulli_p_cuda);
  lib->impl("uniform_", &uniform_cuda_);
  lib->impl("normal_", &normal_cuda_);
}

}  // namespace kiln::native
