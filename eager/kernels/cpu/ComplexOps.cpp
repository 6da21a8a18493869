// The complex conjugate (conj_physical). See Note [Complex dtypes] (eager/core/DType.h).
#include "eager/kernels/cpu/ComplexOps.h"

#include <cmath>
#include <string_view>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/cpu/Copy.h"
#include "eager/kernels/cpu/Factories.h"
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
