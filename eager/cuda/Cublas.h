// cuBLAS (from PyPI's nvidia-cublas wheel), loaded with dlopen at first use.
#pragma once

#include <cstdint>

#include "eager/core/DType.h"
#include "eager/cuda/CudaStream.h"

namespace kiln::cuda {

/// Column-major strided-batched GEMM on `stream`, as cublasGemmStridedBatchedEx:
/// C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] for b < batch, every matrix
/// of `dtype` (Float32, Float64, Float16, BFloat16; float accumulation for the
/// half types). Pointers are device pointers; alpha and beta are host values.
struct GemmArgs {
  bool transa = false;
  bool transb = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
};
void gemm(const Stream& stream, DType dtype, const GemmArgs& args);

/// Loads cuBLAS (RuntimeError saying how to install it when it is missing) and
/// returns the file it came from.
[[nodiscard]] const char* cublas_library_path();

}  // namespace kiln::cuda
