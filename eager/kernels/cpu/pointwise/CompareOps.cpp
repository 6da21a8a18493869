// Comparisons eq, ne, lt, le, gt, ge: Tensor and Scalar `other`, function,
// in-place and out= forms. Results are bool, or converted into an out= (or
// in-place) tensor of any dtype, as PyTorch's build_comparison_op.
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/CompareOpsStubs.h"
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

}  // namespace

// See Note [Overload families] in BinaryOps.h.
KILN_BINARY_OVERLOAD_FAMILY(eq)
KILN_BINARY_OVERLOAD_FAMILY(ne)
KILN_BINARY_OVERLOAD_FAMILY(lt)
KILN_BINARY_OVERLOAD_FAMILY(le)
KILN_BINARY_OVERLOAD_FAMILY(gt)
KILN_BINARY_OVERLOAD_FAMILY(ge)

}  // namespace kiln::native
