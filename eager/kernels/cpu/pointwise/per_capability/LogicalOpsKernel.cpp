// Logical and bitwise loops, compiled per CPU capability (integer and bool
// loops the compiler vectorises).
#include <climits>
#include <type_traits>

#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/LogicalOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
bool truth(T v) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

void logical_kernel(TensorIterator& iter, LogicalOp op) {
  visit_dtype_and_complex(iter.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case LogicalOp::And: return cpu_kernel(iter, [](T a, T b) -> bool { return truth(a) && truth(b); });
      case LogicalOp::Or: return cpu_kernel(iter, [](T a, T b) -> bool { return truth(a) || truth(b); });
      case LogicalOp::Xor: return cpu_kernel(iter, [](T a, T b) -> bool { return truth(a) != truth(b); });
    }
  });
}

void logical_not_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu_kernel(iter, [](T a) -> bool { return !truth(a); });
  });
}

const char* bitwise_kernel_name(LogicalOp op) {
  switch (op) {
    case LogicalOp::And: return "bitwise_and_cpu";
    case LogicalOp::Or: return "bitwise_or_cpu";
    case LogicalOp::Xor: return "bitwise_xor_cpu";
  }
  return "bitwise_cpu";
}

void bitwise_kernel(TensorIterator& iter, LogicalOp op) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case LogicalOp::And: return cpu_kernel(iter, [](bool a, bool b) -> bool { return a && b; });
        case LogicalOp::Or: return cpu_kernel(iter, [](bool a, bool b) -> bool { return a || b; });
        case LogicalOp::Xor: return cpu_kernel(iter, [](bool a, bool b) -> bool { return a != b; });
      }
    } else if constexpr (std::is_integral_v<T>) {
      switch (op) {
        case LogicalOp::And: return cpu_kernel(iter, [](T a, T b) -> T { return static_cast<T>(a & b); });
        case LogicalOp::Or: return cpu_kernel(iter, [](T a, T b) -> T { return static_cast<T>(a | b); });
        case LogicalOp::Xor: return cpu_kernel(iter, [](T a, T b) -> T { return static_cast<T>(a ^ b); });
      }
    } else {
      fail_not_implemented(bitwise_kernel_name(op), iter.common_dtype());
    }
  });
}

void bitwise_not_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      cpu_kernel(iter, [](bool a) -> bool { return !a; });
    } else if constexpr (std::is_integral_v<T>) {
      cpu_kernel(iter, [](T a) -> T { return static_cast<T>(~a); });
    } else {
      fail_not_implemented("bitwise_not_cpu", iter.common_dtype());
    }
  });
}

/// a << b; 0 when b is negative or at least the width (PyTorch's lshift_kernel).
template <typename T>
T shift_left(T a, T b) {
  constexpr T kMaxShift = sizeof(T) * CHAR_BIT;
  if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= kMaxShift) return T(0);
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
}

/// a >> b (arithmetic for signed types); past the width, the sign (PyTorch's rshift_kernel).
template <typename T>
T shift_right(T a, T b) {
  constexpr T kMaxShift = sizeof(T) * CHAR_BIT - std::is_signed_v<T>;
  if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= kMaxShift) return static_cast<T>(a >> kMaxShift);
  return static_cast<T>(a >> b);
}

void shift_kernel(TensorIterator& iter, bool left) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (left) {
        cpu_kernel(iter, [](T a, T b) -> T { return shift_left(a, b); });
      } else {
        cpu_kernel(iter, [](T a, T b) -> T { return shift_right(a, b); });
      }
    } else {
      fail_not_implemented(left ? "lshift_cpu" : "rshift_cpu", iter.common_dtype());
    }
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(logical_stub, &KILN_CPU_NS::logical_kernel);
KILN_REGISTER_DISPATCH(logical_not_stub, &KILN_CPU_NS::logical_not_kernel);
KILN_REGISTER_DISPATCH(bitwise_stub, &KILN_CPU_NS::bitwise_kernel);
KILN_REGISTER_DISPATCH(bitwise_not_stub, &KILN_CPU_NS::bitwise_not_kernel);
KILN_REGISTER_DISPATCH(shift_stub, &KILN_CPU_NS::shift_kernel);

}  // namespace kiln::native
