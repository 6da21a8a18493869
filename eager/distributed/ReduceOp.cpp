// Element-wise combining functions per dtype and ReduceOp: what Gloo's
// algorithms call on each chunk they receive. The algorithms are Gloo's.
#include "eager/distributed/ReduceOp.h"

#include <algorithm>
#include <complex>

#include "eager/core/Error.h"
#include "eager/core/Half.h"

namespace kiln::distributed {

namespace {

// Half and BFloat16 combine through float.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T, typename Op>
ReduceFunction elementwise(Op op) {
  return [op](void* out, const void* a, const void* b, size_t n) {
    auto* o = static_cast<T*>(out);
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) {
      o[i] = static_cast<T>(op(static_cast<Compute<T>>(x[i]), static_cast<Compute<T>>(y[i])));
    }
  };
}

template <typename T>
ReduceFunction typed(ReduceOp op, DType dtype, std::string_view what) {
  using C = Compute<T>;
  if constexpr (std::is_same_v<T, bool>) {
    if (op == ReduceOp::Sum || op == ReduceOp::Max) return elementwise<T>([](bool x, bool y) { return x || y; });
    if (op == ReduceOp::Product || op == ReduceOp::Min) return elementwise<T>([](bool x, bool y) { return x && y; });
    KILN_FAIL(Value, what, ": ReduceOp.AVG is not supported for bool tensors");
  } else {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        KILN_CHECK_VALUE(op != ReduceOp::Avg || is_floating_point(dtype) || is_complex(dtype), what,
                         ": ReduceOp.AVG needs a floating-point or complex tensor, got ", dtype_name(dtype));
        return elementwise<T>([](C x, C y) { return x + y; });
      case ReduceOp::Product:
        return elementwise<T>([](C x, C y) { return x * y; });
      case ReduceOp::Min:
      case ReduceOp::Max:
        if constexpr (std::is_same_v<C, std::complex<float>> || std::is_same_v<C, std::complex<double>>) {
          KILN_FAIL(Value, what, ": ReduceOp.", reduce_op_name(op), " is not supported for complex tensors (",
                    dtype_name(dtype), ")");
        } else if (op == ReduceOp::Min) {
          return elementwise<T>([](C x, C y) { return std::min(x, y); });
        } else {
          return elementwise<T>([](C x, C y) { return std::max(x, y); });
        }
    }
  }
  KILN_FAIL(Value, what, ": unknown ReduceOp ", static_cast<int>(op));
}

template <typename T>
void divide_typed(void* values, size_t count, int divisor) {
  auto* v = static_cast<T*>(values);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(static_cast<Compute<T>>(v[i]) / Compute<T>(divisor));
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "SUM";
    case ReduceOp::Avg: return "AVG";
    case ReduceOp::Product: return "PRODUCT";
    case ReduceOp::Min: return "MIN";
    case ReduceOp::Max: return "MAX";
  }
  return "UNKNOWN";
}

ReduceFunction reduce_function(DType dtype, ReduceOp op, std::string_view what) {
  switch (dtype) {
#define KILN_REDUCE_CASE_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                         \
    return typed<ctype>(op, dtype, what);
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_REDUCE_CASE_)
#undef KILN_REDUCE_CASE_
  }
  KILN_FAIL(Value, what, ": unsupported dtype");
}

void divide_in_place(void* values, DType dtype, size_t count, int divisor) {
  switch (dtype) {
    case DType::Float32: return divide_typed<float>(values, count, divisor);
    case DType::Float64: return divide_typed<double>(values, count, divisor);
    case DType::Float16: return divide_typed<Half>(values, count, divisor);
    case DType::BFloat16: return divide_typed<BFloat16>(values, count, divisor);
    case DType::Complex64: return divide_typed<std::complex<float>>(values, count, divisor);
    case DType::Complex128: return divide_typed<std::complex<double>>(values, count, divisor);
    default: KILN_FAIL(Value, "ReduceOp.AVG needs a floating-point or complex tensor, got ", dtype_name(dtype));
  }
}

}  // namespace kiln::distributed
