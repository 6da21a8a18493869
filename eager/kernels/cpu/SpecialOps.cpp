// Special-function and two-argument float pointwise ops: lgamma, digamma,
// polygamma, sinc, deg2rad, rad2deg; atan2, hypot, logaddexp, logaddexp2,
// copysign, nextafter, xlogy, heaviside. Argument checks and the
// TensorIterator set-up, compiled once; the loops are in
// kernels/SpecialOpsKernel.cpp.
//
// Promotion follows PyTorch op by op: atan2, copysign and xlogy compute
// integer and bool inputs in the default float dtype; hypot, logaddexp,
// logaddexp2 and nextafter keep the common dtype and are not implemented for
// integers; heaviside needs both dtypes equal and works on every dtype.
#include "eager/core/Error.h"
#include "eager/kernels/cpu/ComplexOps.h"
#include "eager/kernels/cpu/BinaryOps.h"
#include "eager/kernels/cpu/SpecialOpsStubs.h"
#include "eager/kernels/cpu/UnaryOps.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

#define KILN_DEFINE_SPECIAL_STUB_(op) KILN_DEFINE_DISPATCH(unary_fn, op##_stub);
KILN_FORALL_SPECIAL_UNARY_OPS(KILN_DEFINE_SPECIAL_STUB_)
#undef KILN_DEFINE_SPECIAL_STUB_
#define KILN_DEFINE_SPECIAL_STUB_(op) KILN_DEFINE_DISPATCH(special_binary_fn, op##_stub);
KILN_FORALL_SPECIAL_BINARY_OPS(KILN_DEFINE_SPECIAL_STUB_)
#undef KILN_DEFINE_SPECIAL_STUB_
KILN_DEFINE_DISPATCH(polygamma_fn, polygamma_stub);

// The kernels special.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).

#define KILN_SPECIAL_UNARY_INTO_(op)                                           \
  Tensor op##_into(ResultInto into, const Tensor& out, const Tensor& self) {   \
    if (is_complex(self.dtype())) return complex_unary_into(#op, into, out, self); \
    auto iter = unary_float_iterator(#op, into, out, self);                    \
    op##_stub(iter);                                                            \
    return finish(iter, into);                                                  \
  }
KILN_FORALL_SPECIAL_UNARY_OPS(KILN_SPECIAL_UNARY_INTO_)
#undef KILN_SPECIAL_UNARY_INTO_

Tensor polygamma_into(ResultInto into, const Tensor& out, int64_t n, const Tensor& self) {
  KILN_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  auto iter = unary_float_iterator("polygamma", into, out, self);
  polygamma_stub(iter, n);
  return finish(iter, into);
}

namespace {

template <auto& stub>
Tensor run_special(const char* name, ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other,
                   bool integer_to_float) {
  auto iter = binary_op_iterator(name, into, out, self, other, integer_to_float);
  stub(iter);
  return finish(iter, into);
}

}  // namespace

Tensor atan2_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<atan2_stub>("atan2", into, out, self, other, /*integer_to_float=*/true);
}
Tensor copysign_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<copysign_stub>("copysign", into, out, self, other, /*integer_to_float=*/true);
}
Tensor xlogy_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<xlogy_stub>("xlogy", into, out, self, other, /*integer_to_float=*/true);
}
Tensor hypot_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<hypot_stub>("hypot", into, out, self, other, false);
}
Tensor logaddexp_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<logaddexp_stub>("logaddexp", into, out, self, other, false);
}
Tensor logaddexp2_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<logaddexp2_stub>("logaddexp2", into, out, self, other, false);
}
Tensor nextafter_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other) {
  return run_special<nextafter_stub>("nextafter", into, out, self, other, false);
}
Tensor heaviside_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& values) {
  KILN_CHECK(self.dtype() == values.dtype(),
             "heaviside is not yet implemented for tensors with different dtypes.");
  return run_special<heaviside_stub>("heaviside", into, out, self, values, false);
}

}  // namespace kiln::native
