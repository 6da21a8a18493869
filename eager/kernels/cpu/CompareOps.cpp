// Comparisons eq, ne, lt, le, gt, ge: Tensor and Scalar `other`, function,
// in-place and out= forms. Results are bool, or converted into an out= (or
// in-place) tensor of any dtype, as PyTorch's build_comparison_op.
#include "eager/kernels/cpu/BinaryOps.h"
#include "eager/kernels/cpu/CompareOpsStubs.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(compare_fn, compare_stub);

namespace {

template <CompareOp kOp>
Tensor compare_into(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  auto iter = comparison_op_iterator(name, into, out, self, other);
  compare_stub(iter, kOp);
  return finish(iter, into);
}

}  // namespace

// The kernels pointwise_binary.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).
#define KILN_COMPARE_INTO(op, kind)                                                           \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) { \
    return compare_into<CompareOp::kind>(#op, into, out, self, other);                        \
  }
KILN_COMPARE_INTO(eq, Eq)
KILN_COMPARE_INTO(ne, Ne)
KILN_COMPARE_INTO(lt, Lt)
KILN_COMPARE_INTO(le, Le)
KILN_COMPARE_INTO(gt, Gt)
KILN_COMPARE_INTO(ge, Ge)
#undef KILN_COMPARE_INTO

}  // namespace kiln::native
