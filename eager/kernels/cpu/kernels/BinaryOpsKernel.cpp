// Binary arithmetic loops, compiled per CPU capability.
#include <type_traits>

#include "eager/kernels/cpu/BinaryOpsStubs.h"
#include "eager/kernels/cpu/Loops.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

void add_kernel(TensorIterator& iter, const Scalar& alpha) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      const bool a = alpha.to<bool>();
      cpu_kernel(iter, [a](bool x, bool y) -> bool { return x || (a && y); });
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      const float a = alpha.to<float>();
      cpu_kernel(iter, [a](T x, T y) -> T { return T(static_cast<float>(x) + a * static_cast<float>(y)); });
    } else if constexpr (std::is_floating_point_v<T>) {
      const T a = alpha.to<T>();
      if (a == T(1)) {
        cpu_kernel_vec(iter, [](T x, T y) -> T { return x + y; }, [](Vec<T> x, Vec<T> y) { return x + y; });
      } else {
        cpu_kernel_vec(iter, [a](T x, T y) -> T { return x + a * y; },
                       [a](Vec<T> x, Vec<T> y) { return fmadd(Vec<T>::splat(a), y, x); });
      }
    } else {
      const T a = alpha.to<T>();
      cpu_kernel(iter, [a](T x, T y) -> T { return static_cast<T>(x + a * y); });
    }
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(add_stub, &KILN_CPU_NS::add_kernel);

}  // namespace kiln::native
