// The complex conjugate (conj_physical). See Note [Complex dtypes] (eager/core/DType.h).
#include "eager/kernels/cpu/pointwise/ComplexOps.h"

#include <cmath>
#include <string_view>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

/// A new contiguous tensor: the conjugate of a complex tensor, a copy of a real one.
Tensor conj_physical_cpu(const Tensor& self) {
  Tensor out = to_dtype_copy(self, self.dtype());
  if (!is_complex(self.dtype())) return out;
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      T* data = out.data_ptr<T>();
      for (int64_t i = 0, n = out.numel(); i < n; ++i) data[i] = std::conj(data[i]);
    }
  });
  return out;
}

namespace {

/// out[i] = f(z[i]) over a contiguous copy of complex `self`, into a new tensor of `out_dtype`.
template <typename F>
Tensor map_complex(const Tensor& self, DType out_dtype, F f) {
  const Tensor src = self.contiguous();
  Tensor result = empty(self.sizes(), out_dtype, self.device());
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      if constexpr (std::is_invocable_v<F, T>) {  // a typed function pointer serves one complex type
        const T* in = src.data_ptr<T>();
        using Out = decltype(f(T{}));
        Out* o = result.data_ptr<Out>();
        for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = f(in[i]);
      }
    }
  });
  return result;
}

Tensor finish_into(ResultInto into, const Tensor& out, Tensor result) {
  return into == ResultInto::Out ? copy_castable_to_out(result, out) : result;
}

}  // namespace

namespace {

template <typename C>
using ComplexFn = C (*)(C);

/// log(1 + z) without the cancellation of forming 1 + z: |1 + z|^2 = 1 + (x(2 + x) + y^2).
template <typename C>
C complex_log1p(C z) {
  using V = typename C::value_type;
  const V x = z.real(), y = z.imag();
  return {V(0.5) * std::log1p(x * (V(2) + x) + y * y), std::atan2(y, V(1) + x)};
}

/// exp(z) - 1 without cancellation: (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y.
template <typename C>
C complex_expm1(C z) {
  using V = typename C::value_type;
  const V x = z.real(), y = z.imag();
  const V half_sin = std::sin(y / V(2));
  return {std::expm1(x) * std::cos(y) - V(2) * half_sin * half_sin, std::exp(x) * std::sin(y)};
}

/// The std::complex form of a unary floating op, or nullptr.
template <typename C>
ComplexFn<C> complex_function(std::string_view op) {
  if (op == "reciprocal") return [](C z) { return C(1) / z; };
  if (op == "sqrt") return [](C z) { return std::sqrt(z); };
  if (op == "rsqrt") return [](C z) { return C(1) / std::sqrt(z); };
  if (op == "exp") return [](C z) { return std::exp(z); };
  if (op == "log") return [](C z) { return std::log(z); };
  if (op == "sin") return [](C z) { return std::sin(z); };
  if (op == "cos") return [](C z) { return std::cos(z); };
  if (op == "tan") return [](C z) { return std::tan(z); };
  if (op == "sinh") return [](C z) { return std::sinh(z); };
  if (op == "cosh") return [](C z) { return std::cosh(z); };
  if (op == "tanh") return [](C z) { return std::tanh(z); };
  if (op == "sigmoid") return [](C z) { return C(1) / (C(1) + std::exp(-z)); };
  if (op == "silu") return [](C z) { return z / (C(1) + std::exp(-z)); };
  if (op == "square") return [](C z) { return z * z; };
  if (op == "exp2") return [](C z) { return std::exp(z * typename C::value_type(0.6931471805599453)); };
  if (op == "log2") return [](C z) { return std::log(z) / typename C::value_type(0.6931471805599453); };
  if (op == "log10") return [](C z) { return std::log10(z); };
  if (op == "log1p") return &complex_log1p<C>;
  if (op == "expm1") return &complex_expm1<C>;
  if (op == "asin") return [](C z) { return std::asin(z); };
  if (op == "acos") return [](C z) { return std::acos(z); };
  if (op == "atan") return [](C z) { return std::atan(z); };
  if (op == "asinh") return [](C z) { return std::asinh(z); };
  if (op == "acosh") return [](C z) { return std::acosh(z); };
  if (op == "atanh") return [](C z) { return std::atanh(z); };
  if (op == "sinc") {
    return [](C z) {
      using V = typename C::value_type;
      const C x = z * V(3.14159265358979323846);
      return z == C(0) ? C(1) : std::sin(x) / x;
    };
  }
  return nullptr;
}

}  // namespace

Tensor complex_unary_into(const char* op, ResultInto into, const Tensor& out, const Tensor& self) {
  Tensor result;
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      const ComplexFn<T> fn = complex_function<T>(op);
      KILN_CHECK_NOT_IMPLEMENTED(fn != nullptr, "\"", op, "\" not implemented for '", scalar_type_name(self.dtype()), "'");
      result = map_complex(self, self.dtype(), fn);
    }
  });
  if (into == ResultInto::InPlace) {
    copy_(self, result);
    return self;
  }
  return finish_into(into, out, result);
}

Tensor complex_abs_into(ResultInto into, const Tensor& out, const Tensor& self) {
  KILN_CHECK(into != ResultInto::InPlace, "In-place abs is not supported for complex tensors.");
  return finish_into(into, out, map_complex(self, to_real_value_type(self.dtype()), [](auto z) { return std::abs(z); }));
}

Tensor complex_sgn_into(ResultInto into, const Tensor& out, const Tensor& self) {
  Tensor result = map_complex(self, self.dtype(), [](auto z) {
    const auto magnitude = std::abs(z);
    return magnitude == 0 ? decltype(z)(0) : z / magnitude;
  });
  if (into == ResultInto::InPlace) {
    copy_(self, result);
    return self;
  }
  return finish_into(into, out, result);
}

}  // namespace kiln::native
