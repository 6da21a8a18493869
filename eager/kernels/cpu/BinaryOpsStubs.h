// Dispatch stubs of the binary arithmetic kernels (defined per capability in
// eager/kernels/cpu/kernels/BinaryOpsKernel.cpp).
#pragma once

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

using binary_alpha_fn = void (*)(TensorIterator& iter, const Scalar& alpha);
KILN_DECLARE_DISPATCH(binary_alpha_fn, add_stub);

}  // namespace kiln::native
