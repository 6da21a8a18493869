// layer_norm's and rms_norm's argument checks and their [rows, cols] view,
// shared by the CPU and CUDA kernels so both refuse the same inputs with the
// same words (torch's). See Note [Norm statistics] (cpu/nn/NormOps.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// A norm's input read as [rows, cols]: cols = prod(normalized_shape), rows the
/// product of the leading dims (so an empty row still has its statistics).
struct NormRows {
  int64_t rows = 0;  // M
  int64_t cols = 0;  // N
};

/// torch's checks of normalized_shape, weight and bias against the input (a
/// floating input), in its order and words; then the [rows, cols] view.
[[nodiscard]] NormRows check_norm_arguments(const Tensor& input, IntArrayRef normalized_shape,
                                            const std::optional<Tensor>& weight, const std::optional<Tensor>& bias);

}  // namespace kiln::native
