// BLAS glue: operand layouts, dtypes, thread count. float32 products go to
// oneDNN (Note [float32 GEMM on oneDNN]), float64 to OpenBLAS.
#include "eager/kernels/cpu/linalg/Blas.h"

#include <atomic>
#include <cblas.h>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/GemmOneDnn.h"

namespace kiln::native {

namespace {

/// How a 2-D operand reaches the BLAS: as is, transposed, or copied first.
struct BlasOperand {
  Tensor tensor;  // the tensor to pass (maybe a contiguous copy)
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};

BlasOperand as_blas_operand(const Tensor& t, DType dtype) {
  const int64_t rows = t.size(0), cols = t.size(1);
  if (t.dtype() == dtype) {
    if (t.stride(1) == 1 && t.stride(0) >= std::max<int64_t>(1, cols)) return {t, CblasNoTrans, t.stride(0)};
    if (t.stride(0) == 1 && t.stride(1) >= std::max<int64_t>(1, rows)) return {t, CblasTrans, t.stride(1)};
  }
  Tensor dense = to_dtype_copy(t, dtype);
  return {dense, CblasNoTrans, std::max<int64_t>(1, cols)};
}

template <typename T>
void naive_gemm(const Tensor& a, const Tensor& b, const Tensor& c, T alpha, T beta) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* pc = c.data_ptr<T>();
  const int64_t sa0 = a.stride(0), sa1 = a.stride(1), sb0 = b.stride(0), sb1 = b.stride(1);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * sa0 + p * sa1] * pb[p * sb0 + j * sb1];
      pc[i * n + j] = beta == T(0) ? static_cast<T>(alpha * acc) : static_cast<T>(beta * pc[i * n + j] + alpha * acc);
    }
  }
}

/// c = beta * c for an empty inner dimension (0 when beta is 0, whatever c held).
template <typename T>
void scale_matrix(T* c, int64_t m, int64_t n, int64_t ldc, T beta) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  }
}

/// float32 products on oneDNN where its AVX-512 kernels run, and at AVX2 for
/// small products only; OpenBLAS otherwise (Note [float32 GEMM on oneDNN]).
bool sgemm_on_onednn(int64_t m, int64_t n, int64_t k) {
  static const bool avx512 = cpu_capability() == CpuCapability::AVX512;
  constexpr int64_t kAvx2OneDnnMaxWork = int64_t{1} << 25;  // multiply-adds: up to about 320^3
  return avx512 || m * n * k < kAvx2OneDnnMaxWork;
}

/// OpenBLAS's row-major gemm for float and for double.
void openblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha,
                   const float* a, blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void openblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, double alpha,
                   const double* a, blasint lda, const double* b, blasint ldb, double beta, double* c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void sync_blas_threads() {
  static std::atomic<int> current{-1};
  // Inside a parallel_for body (bmm's batch split) each gemm runs on its own thread.
  const int want = in_parallel_region() ? 1 : get_num_threads();
  if (current.exchange(want) != want) openblas_set_num_threads(want);
}

template <typename T>
void gemm_raw(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
              const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return scale_matrix(c, m, n, ldc, beta);
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_on_onednn(m, n, k)) {  // Note [float32 GEMM on oneDNN]
      onednn_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  }
  sync_blas_threads();
  openblas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}
template void gemm_raw<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                              int64_t, float, float*, int64_t);
template void gemm_raw<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                               int64_t, double, double*, int64_t);

void gemm_into(const Tensor& a, const Tensor& b, const Tensor& c, const Scalar& alpha, const Scalar& beta) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  KILN_INTERNAL_ASSERT(b.size(0) == k && c.size(0) == m && c.size(1) == n && c.is_contiguous());
  if (m == 0 || n == 0 || c.impl()->is_meta()) return;  // a loop: Note [Stubs skip meta tensors]
  const DType dtype = c.dtype();
  if (dtype == DType::Float32 || dtype == DType::Float64) {
    const BlasOperand A = as_blas_operand(a, dtype), B = as_blas_operand(b, dtype);
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        gemm_raw<T>(A.trans == CblasTrans, B.trans == CblasTrans, m, n, k, alpha.to<T>(), A.tensor.data_ptr<T>(),
                    A.ld, B.tensor.data_ptr<T>(), B.ld, beta.to<T>(), c.data_ptr<T>(), n);
      }
    });
    return;
  }
  if (is_complex(dtype)) {
    // cgemm / zgemm: a transposed operand is a plain transpose (kiln has no conjugate bit).
    const BlasOperand A = as_blas_operand(a, dtype), B = as_blas_operand(b, dtype);
    visit_dtype_and_complex(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        const T alpha_c = alpha.to<T>(), beta_c = beta.to<T>();
        const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
        const auto lda = static_cast<blasint>(A.ld), ldb = static_cast<blasint>(B.ld);
        sync_blas_threads();
        if constexpr (std::is_same_v<T, std::complex<float>>) {
          cblas_cgemm(CblasRowMajor, A.trans, B.trans, M, N, K, &alpha_c, A.tensor.data_ptr<T>(), lda,
                      B.tensor.data_ptr<T>(), ldb, &beta_c, c.data_ptr<T>(), N);
        } else {
          cblas_zgemm(CblasRowMajor, A.trans, B.trans, M, N, K, &alpha_c, A.tensor.data_ptr<T>(), lda,
                      B.tensor.data_ptr<T>(), ldb, &beta_c, c.data_ptr<T>(), N);
        }
      }
    });
    return;
  }
  if (dtype == DType::Float16 || dtype == DType::BFloat16) {
    // Computed in float32, as PyTorch does on the CPU.
    Tensor c32 = to_dtype_copy(c, DType::Float32);
    gemm_into(to_dtype_copy(a, DType::Float32), to_dtype_copy(b, DType::Float32), c32, alpha, beta);
    copy_(c, c32);
    return;
  }
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_floating_point_v<T>) {
      KILN_INTERNAL_ASSERT(false);
    } else {
      naive_gemm<T>(a, b, c, alpha.to<T>(), beta.to<T>());
    }
  });
}

}  // namespace kiln::native
