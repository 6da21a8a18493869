// TensorIterator loops that turn drawn numbers into samples with tensor
// parameters (normal with tensor mean/std, bernoulli with a tensor p),
// compiled per CPU capability. The numbers themselves come from RandomKernel.cpp.
#include <atomic>
#include <type_traits>

#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/random/RandomStubs.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

void normal_affine_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      cpu_kernel(iter, [](T z, T mean, T std) -> T {
        return T(static_cast<float>(z) * static_cast<float>(std) + static_cast<float>(mean));
      });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel_vec(
          iter, [](T z, T mean, T std) -> T { return z * std + mean; },
          [](Vec<T> z, Vec<T> mean, Vec<T> std) { return z * std + mean; });
    } else {
      KILN_INTERNAL_ASSERT(false);  // Random.cpp computes in a floating dtype
    }
  });
}

/// Sets `invalid_p` where a p is outside [0, 1] (or NaN) instead of throwing
/// inside the parallel loop; Random.cpp raises PyTorch's error afterwards.
void bernoulli_compare_kernel(TensorIterator& iter, bool& invalid_p) {
  std::atomic<bool> invalid{false};
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      cpu_kernel(iter, [&invalid](double u, double p) -> double {
        if (!(p >= 0 && p <= 1)) invalid.store(true, std::memory_order_relaxed);
        return u < p ? 1.0 : 0.0;
      });
    } else {
      KILN_INTERNAL_ASSERT(false);  // Random.cpp compares in double
    }
  });
  invalid_p = invalid.load();
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(normal_affine_stub, &KILN_CPU_NS::normal_affine_kernel);
KILN_REGISTER_DISPATCH(bernoulli_compare_stub, &KILN_CPU_NS::bernoulli_compare_kernel);

}  // namespace kiln::native
