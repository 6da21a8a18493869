// Runtime choice between builds of the same kernel for different instruction
// sets. See Note [One kernel source, several instruction sets].
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace kiln {

// Note [One kernel source, several instruction sets]
// --------------------------------------------------
// Files under eager/kernels/cpu/*/per_capability/ are compiled once per capability
// (DEFAULT: baseline x86-64; AVX2: +AVX2/FMA/F16C; AVX512: +AVX-512 F/BW/VL/DQ),
// each inside its own namespace kiln::native::<capability> so their inline
// templates (Vec, loops) never collide. Each build registers its kernels into a
// DispatchStub; the first call picks the best build this CPU supports
// (KILN_CPU_CAPABILITY=default|avx2|avx512 in the environment caps it, which
// tests use to exercise every build). Shape and dtype logic lives in the op's
// meta code, compiled once; only the loops are compiled three times.
enum class CpuCapability : uint8_t { Default = 0, AVX2 = 1, AVX512 = 2 };
inline constexpr int kNumCpuCapabilities = 3;

/// The best capability of this CPU, capped by KILN_CPU_CAPABILITY.
[[nodiscard]] CpuCapability cpu_capability();
[[nodiscard]] std::string_view cpu_capability_name(CpuCapability c);

// Note [Stubs skip meta tensors]
// ------------------------------
// A stub is a kernel's loop: it reads and writes data. A meta tensor has none
// (Note [Meta tensors have no data], eager/core/Storage.h), so a stub that
// returns nothing and is handed a meta tensor or a TensorIterator over meta
// tensors does nothing. The kernel around it has already checked the inputs
// and allocated the outputs on the meta device: the kernel's shape code is its
// meta function, as PyTorch's structured kernels share their meta() between
// backends, and ops.yaml registers it at the Meta key (`meta: cpu_kernel`).
namespace detail {
template <typename T>
[[nodiscard]] bool stub_argument_is_meta(const T& arg) {
  if constexpr (requires { arg.impl()->is_meta(); }) {  // Tensor
    return arg.defined() && arg.impl()->is_meta();
  } else if constexpr (requires { arg.is_meta(); }) {  // TensorIterator
    return arg.is_meta();
  } else {
    return false;
  }
}
}  // namespace detail

/// A kernel function pointer per capability; calling it runs the best one registered.
template <typename FnPtr>
struct DispatchStub {
  FnPtr table[kNumCpuCapabilities] = {};

  [[nodiscard]] FnPtr choose() const {
    for (int c = static_cast<int>(cpu_capability()); c >= 0; --c) {
      if (table[c] != nullptr) return table[c];
    }
    return nullptr;
  }
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    if constexpr (std::is_void_v<decltype(std::declval<FnPtr>()(std::forward<Args>(args)...))>) {
      if ((detail::stub_argument_is_meta(args) || ...)) return;  // Note [Stubs skip meta tensors]
    }
    FnPtr fn = choose();
    return fn(std::forward<Args>(args)...);
  }
};

}  // namespace kiln

/// In a header compiled once: KILN_DECLARE_DISPATCH(void (*)(TensorIterator&), add_stub);
#define KILN_DECLARE_DISPATCH(fn_type, name) extern ::kiln::DispatchStub<fn_type> name
/// In a .cpp compiled once.
#define KILN_DEFINE_DISPATCH(fn_type, name) ::kiln::DispatchStub<fn_type> name
/// In a kernel file (compiled per capability).
#define KILN_REGISTER_DISPATCH(name, fn)                                                          \
  static const bool KILN_CONCAT_CAP_(kiln_registered_, name) =                                    \
      (name.table[static_cast<int>(::kiln::CpuCapability::KILN_CPU_CAPABILITY_ENUM)] = (fn), true)
#define KILN_CONCAT_CAP_INNER_(a, b) a##b
#define KILN_CONCAT_CAP_(a, b) KILN_CONCAT_CAP_INNER_(a, b)
