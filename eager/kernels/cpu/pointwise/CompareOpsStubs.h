// Dispatch stub of the comparison kernels (eq, ne, lt, le, gt, ge), defined
// per capability in eager/kernels/cpu/pointwise/per_capability/CompareOpsKernel.cpp.
#pragma once

#include <cstdint>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

/// bool out = input0 <op> input1, computed in the inputs' (common) dtype.
using compare_fn = void (*)(TensorIterator& iter, CompareOp op);
KILN_DECLARE_DISPATCH(compare_fn, compare_stub);

}  // namespace kiln::native
