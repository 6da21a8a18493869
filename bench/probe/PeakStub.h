// The floating-point peak probe's dispatch stub (see per_capability/PeakKernel.cpp),
// defined in PeakStub.cpp; both are built into kiln._C (bench/probe/README.md).
#pragma once

#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// GFLOP/s of one core running fused multiply-adds for `seconds`, with the
/// widest vectors this build and CPU support.
using fp32_peak_fn = double (*)(double seconds);
KILN_DECLARE_DISPATCH(fp32_peak_fn, fp32_peak_stub);

}  // namespace kiln::native
