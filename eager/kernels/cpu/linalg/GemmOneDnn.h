// float32 matrix products on oneDNN's sgemm, split across kiln's threads.
// See Note [float32 GEMM on oneDNN].
#pragma once

#include <cstdint>

namespace kiln::native {

/// c = beta * c + alpha * op(a) @ op(b), row-major, as gemm_raw<float>
/// (m, n, k > 0). Splits the larger of m and n across kiln's threads, each
/// piece one single-threaded oneDNN call.
void onednn_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace kiln::native
