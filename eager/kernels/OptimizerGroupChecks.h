// The fused optimizer updates' argument checks (_fused_adam_, _fused_sgd_),
// shared by the CPU and CUDA kernels.
#pragma once

#include <initializer_list>
#include <utility>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// Every list in `lists` is empty or one tensor per parameter; parameters are
/// float32/float64 and contiguous; each list's tensor matches its parameter's
/// dtype, element count and device, contiguous.
void check_optimizer_group(const char* op, TensorList params,
                           std::initializer_list<std::pair<const char*, TensorList>> lists);

}  // namespace kiln::native
