// The error RealOnly raises: see Note [Kernels that refuse complex tensors] (RealOnly.h).
#include "eager/dispatch/RealOnly.h"

#include "eager/core/Error.h"

namespace kiln::native {

void fail_complex_not_implemented(const char* op, DType dtype) {
  KILN_FAIL(NotImplemented, "\"", op, "\" not implemented for '", scalar_type_name(dtype),
            "' (kiln's complex support covers creation and random factories, views, copies, indexing, "
            "arithmetic, pow, equality, sum/mean/prod, cumsum/cumprod, var/std, vector norms, matrix products, "
            "the elementwise functions with a complex form, the conjugate, LAPACK and the FFTs; ops that "
            "PyTorch itself refuses for complex tensors are refused here too)");
}

}  // namespace kiln::native
