// cuBLASLt (libcublasLt.so.13 from PyPI's nvidia-cublas wheel), loaded with
// dlopen at first use like cuBLAS: GEMMs with a fused bias epilogue.
#pragma once

#include <cstddef>

#include "eager/core/DType.h"
#include "eager/cuda/Cublas.h"
#include "eager/cuda/CudaStream.h"

namespace kiln::cuda {

/// D = alpha * op(A) @ op(B) + bias (bias broadcast along D's columns: bias[i] is added to
/// every element of D's row i, column-major, i < args.m), as one cuBLASLt matmul with the
/// CUBLASLT_EPILOGUE_BIAS epilogue; args as for gemm() (batch 1, beta ignored), D = args.c.
/// Float32, Float16 and BFloat16 (float accumulation). Returns false, having launched
/// nothing, when cuBLASLt cannot be loaded or offers no algorithm for the case (the caller
/// falls back to gemm and an add); `workspace` (device memory of `workspace_bytes`) is
/// scratch for the algorithm. Algorithms are chosen once per shape and cached.
[[nodiscard]] bool gemm_bias_epilogue(const Stream& stream, DType dtype, const GemmArgs& args, const void* bias,
                                      void* workspace, size_t workspace_bytes);

/// Whether cuBLASLt loads (never throws); its path when it does.
[[nodiscard]] bool cublaslt_available();
[[nodiscard]] const char* cublaslt_library_path();

}  // namespace kiln::cuda
