// The peak probe's dispatch stub; its per-capability loops register into it
// (per_capability/PeakKernel.cpp).
#include "bench/probe/PeakStub.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(fp32_peak_fn, fp32_peak_stub);

}  // namespace kiln::native
