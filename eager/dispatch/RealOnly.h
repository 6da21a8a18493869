// RealOnly: the backend kernel wrapper that refuses complex tensors for ops
// whose kernels are written for real numbers. See Note [Complex dtypes]
// (eager/core/DType.h) and Note [Kernels that refuse complex tensors].
#pragma once

#include <optional>
#include <utility>

#include "eager/core/DType.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

// Note [Kernels that refuse complex tensors]
// ------------------------------------------
// A kernel written for real numbers that meets a complex tensor either fails
// inside visit_dtype (NotImplementedError, good) or, worse, computes a
// result dtype by category ("floating? else int64") and converts the complex
// input to it, silently dropping the imaginary part. So opgen registers every
// backend kernel of an op that is neither a view nor tagged `complex` in
// ops.yaml through RealOnly, which raises PyTorch's NotImplementedError
// ("\"cumsum\" not implemented for 'ComplexFloat'") before the kernel runs.
// An op joins the complex ones by handling them and taking the tag.

[[noreturn]] void fail_complex_not_implemented(const char* op, DType dtype);

inline void refuse_complex(const char* op, const Tensor& t) {
  if (t.defined() && is_complex(t.dtype())) fail_complex_not_implemented(op, t.dtype());
}
inline void refuse_complex(const char* op, const std::optional<Tensor>& t) {
  if (t) refuse_complex(op, *t);
}
inline void refuse_complex(const char* op, TensorList tensors) {
  for (const Tensor& t : tensors) refuse_complex(op, t);
}
inline void refuse_complex(const char* op, OptionalTensorList tensors) {
  for (const auto& t : tensors) refuse_complex(op, t);
}
template <typename T>
inline void refuse_complex(const char*, const T&) {}

template <auto Kernel, const char* Name>
struct RealOnly;

template <typename R, typename... Args, R (*Kernel)(Args...), const char* Name>
struct RealOnly<Kernel, Name> {
  static R call(Args... args) {
    (refuse_complex(Name, args), ...);
    return Kernel(std::forward<Args>(args)...);
  }
};

}  // namespace kiln::native
