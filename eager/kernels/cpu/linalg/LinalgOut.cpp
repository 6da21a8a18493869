// addbmm's out= form (eager/ops/linalg.yaml). The other matrix products' out=
// forms are generated (out_from_functional: Note [Out= dtype rules],
// eager/kernels/cpu/OutFromFunctional.h).
#include "eager/core/Error.h"
#include "eager/kernels/cpu/OutFromFunctional.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

Tensor addbmm_out_cpu(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                      const Scalar& alpha, const Tensor& out) {
  // PyTorch runs addbmm's out= form as an addmm into out, so out meets mat2's dtype check.
  KILN_CHECK(out.dtype() == batch2.dtype(), "self and mat2 must have the same dtype, but got ",
             scalar_type_name(out.dtype()), " and ", scalar_type_name(batch2.dtype()));
  return out_exact_dtype("addbmm", kiln::addbmm(self, batch1, batch2, beta, alpha), out);
}

}  // namespace kiln::native
