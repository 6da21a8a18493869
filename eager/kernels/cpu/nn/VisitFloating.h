// visit_floating_dtype: visit_dtype for the floating dtypes only, for the
// compiled-once NN files (EmbeddingOps.cpp, LossNll.cpp) whose ops take
// floating inputs alone (the per-capability loops have NnVec.h's visit_floating).
#pragma once

#include "eager/core/DType.h"
#include "eager/core/Half.h"

namespace kiln::native {

/// Runs fn(tag) with float, double, Half or BFloat16; any other dtype is read as float.
template <typename Fn>
void visit_floating_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(double{}); return;
    case DType::Float16: fn(Half{}); return;
    case DType::BFloat16: fn(BFloat16{}); return;
    default: fn(float{}); return;
  }
}

}  // namespace kiln::native
