// The BLAS behind matrix products, chosen by measurement (see
// eager/kernels/cpu/README.md): oneDNN's sgemm for float32 (Note [float32 GEMM
// on oneDNN]), OpenBLAS for float64. gemm_into passes transposed operands to
// the BLAS as transposes, never copying them.
#pragma once

#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// c = beta * c + alpha * (a @ b) for 2-D a [m, k], b [k, n] and a dense
/// row-major c [m, n] of the same dtype. Any dtype; float16/bfloat16 go through
/// float32, integers through a plain loop.
void gemm_into(const Tensor& a, const Tensor& b, const Tensor& c, const Scalar& alpha, const Scalar& beta);

/// c = beta * c + alpha * op(a) @ op(b) on raw row-major buffers (dnnl_sgemm /
/// cblas_dgemm): op(a) is [m, k], op(b) [k, n], c [m, n] with leading dims
/// lda, ldb, ldc; op transposes when trans_* is set. T is float or double.
template <typename T>
void gemm_raw(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
              const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

/// Keeps the BLAS's thread count equal to kiln.get_num_threads() (1 inside a
/// parallel_for body, where the work is already split across threads).
void sync_blas_threads();

}  // namespace kiln::native
