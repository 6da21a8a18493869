// nll_loss's argument checks and its [batch, classes] view, shared by the CPU
// and CUDA kernels so both refuse the same inputs with torch's words.
#pragma once

#include <cstdint>
#include <optional>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// nll_loss's input read as [batch, classes] (batched: the input is 2-D).
struct NllShape {
  int64_t batch = 1;
  int64_t classes = 0;
  bool batched = true;
};

/// torch's checks of the input, target, weight and reduction, in its order and words.
[[nodiscard]] NllShape check_nll_arguments(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                           int64_t reduction);

}  // namespace kiln::native
