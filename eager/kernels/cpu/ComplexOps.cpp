// The complex conjugate (conj_physical). See Note [Complex dtypes] (eager/core/DType.h).
#include "eager/core/Error.h"
#include "eager/kernels/cpu/Copy.h"
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

}  // namespace kiln::native
