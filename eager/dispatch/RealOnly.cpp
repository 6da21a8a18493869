// The error RealOnly raises: see Note [Kernels that refuse complex tensors] (RealOnly.h).
#include "eager/dispatch/RealOnly.h"

#include "eager/core/Error.h"

namespace kiln::native {

void fail_complex_not_implemented(const char* op, DType dtype) {
  KILN_FAIL(NotImplemented, "\"", op, "\" not implemented for '", scalar_type_name(dtype),
            "' (kiln's complex support covers creation, views, copies, arithmetic, sum, matrix products, "
            "abs, sgn, exp/log/sqrt/reciprocal, the trigonometric and hyperbolic functions, sigmoid and the "
            "conjugate so far)");
}

}  // namespace kiln::native
