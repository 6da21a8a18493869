// LU factorisation (linalg_lu_factor_ex) and linear solves (_linalg_solve) on
// LAPACK: OpenBLAS's sgetrf/dgetrf and sgesv/dgesv, one call per matrix of a
// batch; triangular solves (linalg_solve_triangular) on BLAS's trsm. LAPACK is column-major: a row-major matrix's transpose, made
// contiguous, is its column-major copy, and results come back as transposed
// views (column-major strides, as PyTorch's do).
//
// Note [Linear algebra through one solve]
// ---------------------------------------
// linalg.solve, linalg.inv (a solve against the identity), linalg.det and
// linalg.slogdet (from the LU's diagonal, with their gradients through
// inv(A)^T) are Python over these two ops (python/kiln/linalg/_solve.py). Only
// _linalg_solve has a derivative formula (dB = solve(A^T, g), dA = -dB X^T);
// every other gradient is a composition of differentiable ops around it.
#include <complex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include <cblas.h>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/linalg/LapackHelpers.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

// LAPACK's Fortran entry points (32-bit integers: Debian's OpenBLAS builds).
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgesv_(const int* n, const int* nrhs, float* a, const int* lda, int* ipiv, float* b, const int* ldb, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb,
            int* info);
// The complex forms: std::complex<T> has Fortran COMPLEX's layout.
void cgetrf_(const int* m, const int* n, std::complex<float>* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, std::complex<double>* a, const int* lda, int* ipiv, int* info);
void cgesv_(const int* n, const int* nrhs, std::complex<float>* a, const int* lda, int* ipiv, std::complex<float>* b,
            const int* ldb, int* info);
void zgesv_(const int* n, const int* nrhs, std::complex<double>* a, const int* lda, int* ipiv,
            std::complex<double>* b, const int* ldb, int* info);
}

namespace kiln::native {

using namespace lapack;

namespace {

void getrf(int m, int n, float* a, int* ipiv, int* info) { sgetrf_(&m, &n, a, &m, ipiv, info); }
void getrf(int m, int n, double* a, int* ipiv, int* info) { dgetrf_(&m, &n, a, &m, ipiv, info); }
void gesv(int n, int nrhs, float* a, int* ipiv, float* b, int* info) { sgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info); }
void gesv(int n, int nrhs, double* a, int* ipiv, double* b, int* info) {
  dgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info);
}
void getrf(int m, int n, std::complex<float>* a, int* ipiv, int* info) { cgetrf_(&m, &n, a, &m, ipiv, info); }
void getrf(int m, int n, std::complex<double>* a, int* ipiv, int* info) { zgetrf_(&m, &n, a, &m, ipiv, info); }
void gesv(int n, int nrhs, std::complex<float>* a, int* ipiv, std::complex<float>* b, int* info) {
  cgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info);
}
void gesv(int n, int nrhs, std::complex<double>* a, int* ipiv, std::complex<double>* b, int* info) {
  zgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info);
}

/// The element types the getrf/gesv overloads take: float, double and their complex forms.
template <typename T>
constexpr bool is_lu_type = is_lapack_type<T> || std::is_same_v<T, std::complex<float>> ||
                            std::is_same_v<T, std::complex<double>>;

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex_cpu(const Tensor& A, bool pivot, bool check_errors) {
  KILN_CHECK(A.dim() >= 2, "kiln.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", A.sizes(),
             " instead");
  KILN_CHECK_NOT_IMPLEMENTED(A.dtype() == DType::Float32 || A.dtype() == DType::Float64 || is_complex(A.dtype()),
                             "\"lu_cpu\" not implemented for '", dtype_word(A.dtype()), "'");
  KILN_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  Tensor lu = column_major(A);
  const int64_t batches = batch_count(A);
  DimVector pivot_shape = batch_shape(A);
  pivot_shape.push_back(k);
  Tensor pivots = empty(pivot_shape, DType::Int32, A.device());
  Tensor info = zeros(batch_shape(A), DType::Int32, A.device());
  if (A.impl()->is_meta()) return {kiln::transpose(lu, -2, -1), pivots, info};  // meta: the checks above
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lu_type<T>) {
      for (int64_t b = 0; b < batches && k > 0; ++b) {
        int status = 0;
        getrf(checked_int(m), checked_int(n), lu.data_ptr<T>() + b * m * n, pivots.data_ptr<int32_t>() + b * k,
              &status);
        info.data_ptr<int32_t>()[b] = status;
        KILN_CHECK(!(check_errors && status > 0), "kiln.linalg.lu_factor_ex: ", batch_prefix(A, b),
                   "U[", status, ",", status, "] is zero and using it on lu_solve would result in a division by "
                   "zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                   "linalg.lu_factor_ex(A, pivot)");
      }
    }
  });
  return {kiln::transpose(lu, -2, -1), pivots, info};
}

Tensor _lu_pivots_to_permutation_cpu(const Tensor& pivots, int64_t m) {
  KILN_CHECK(pivots.dtype() == DType::Int32 && pivots.dim() >= 1, "lu_unpack: LU_pivots must be an int32 tensor "
             "with at least one dimension, got ", pivots.dim(), " dimensions");
  const int64_t k = pivots.size(-1);
  KILN_CHECK(k <= m, "lu_unpack: ", k, " pivots for matrices of ", m, " rows");
  const Tensor piv = pivots.contiguous();
  DimVector shape;
  for (int64_t d = 0; d < pivots.dim() - 1; ++d) shape.push_back(pivots.size(d));
  shape.push_back(m);
  Tensor perm = empty(shape, DType::Int64, pivots.device());
  if (perm.impl()->is_meta()) return perm;  // the pivots' range is checked where the values are read
  const int64_t batches = m == 0 ? 0 : perm.numel() / m;
  const int32_t* p = piv.data_ptr<int32_t>();
  int64_t* out = perm.data_ptr<int64_t>();
  for (int64_t b = 0; b < batches; ++b) {
    int64_t* row = out + b * m;
    for (int64_t i = 0; i < m; ++i) row[i] = i;
    for (int64_t i = 0; i < k; ++i) {  // LAPACK's interchanges, in order: row i with row pivots[i] - 1
      const int64_t j = p[b * k + i] - 1;
      KILN_CHECK_INDEX(j >= i && j < m, "lu_unpack: pivot ", j + 1, " at position ", i + 1, " is out of range [",
                       i + 1, ", ", m, "]");
      std::swap(row[i], row[j]);
    }
  }
  return perm;
}

Tensor linalg_solve_cpu(const Tensor& A, const Tensor& B, std::string_view caller) {
  if (caller == "linalg.inv") {
    KILN_CHECK(A.dtype() != DType::Float16 && A.dtype() != DType::BFloat16,
               "linalg.inv: Low precision dtypes not supported. Got ", dtype_word(A.dtype()));
  }
  KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), caller, ": A must be batches of square matrices, but they are ", A.size(-2),
             " by ", A.size(-1), " matrices");
  check_float_or_complex_matrices(caller, "lu_cpu", A);
  KILN_CHECK(B.dim() == A.dim() && B.dtype() == A.dtype(), caller, ": internal: B must be a batch of matrices of A's "
             "dtype and batch shape");
  const int64_t n = A.size(-1);
  const int64_t k = B.size(-1);
  KILN_CHECK(B.size(-2) == n, caller, ": Incompatible shapes of A and B for the equation AX = B (", n, "x", n, " and ",
             B.size(-2), "x", k, ")");
  for (int64_t d = 0; d < A.dim() - 2; ++d) {
    KILN_CHECK(A.size(d) == B.size(d), caller, ": internal: A and B must share their batch shape");
  }
  Tensor a = column_major(A);
  Tensor x = column_major(B);
  const int64_t batches = a.numel() / std::max<int64_t>(n * n, 1);
  if (n == 0 || k == 0 || x.impl()->is_meta()) return kiln::transpose(x, -2, -1);  // meta: the checks above
  Tensor pivots = empty({n}, DType::Int32, A.device());
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lu_type<T>) {
      for (int64_t b = 0; b < batches; ++b) {
        int status = 0;
        gesv(checked_int(n), checked_int(k), a.data_ptr<T>() + b * n * n, pivots.data_ptr<int32_t>(),
             x.data_ptr<T>() + b * n * k, &status);
        if (status > 0) {
          if (caller == "linalg.inv") {
            KILN_FAIL(Runtime, "linalg.inv: ", batch_prefix(A, b), "The diagonal element ", status,
                      " is zero, the inversion could not be completed because the input matrix is singular.");
          }
          KILN_FAIL(Runtime, caller, ": ", batch_prefix(A, b),
                    "The solver failed because the input matrix is singular.");
        }
      }
    }
  });
  return kiln::transpose(x, -2, -1);
}

namespace {

void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_DIAG diag, int rows, int cols, const float* a, int lda, float* x) {
  cblas_strsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, rows, cols, 1.0f, a, lda, x, std::max(cols, 1));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_DIAG diag, int rows, int cols, const double* a, int lda,
          double* x) {
  cblas_dtrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, rows, cols, 1.0, a, lda, x, std::max(cols, 1));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_DIAG diag, int rows, int cols, const std::complex<float>* a,
          int lda, std::complex<float>* x) {
  const std::complex<float> one(1.0f, 0.0f);
  cblas_ctrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, rows, cols, &one, a, lda, x, std::max(cols, 1));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_DIAG diag, int rows, int cols, const std::complex<double>* a,
          int lda, std::complex<double>* x) {
  const std::complex<double> one(1.0, 0.0);
  cblas_ztrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, rows, cols, &one, a, lda, x, std::max(cols, 1));
}

}  // namespace

Tensor linalg_solve_triangular_cpu(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  constexpr std::string_view caller = "linalg.solve_triangular";
  KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(B.dim() >= 2, caller, ": The input tensor B must have at least 2 dimensions.");
  const int64_t n = A.size(-1);
  const int64_t rows = B.size(-2), cols = B.size(-1);
  KILN_CHECK(A.size(-2) == n, caller, ": A must be batches of square matrices, but they are ", A.size(-2), " by ", n,
             " matrices");
  KILN_CHECK(left ? rows == n : cols == n, caller, ": Incompatible shapes of A and B for the equation ",
             left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", rows, "x", cols, ")");
  KILN_CHECK_NOT_IMPLEMENTED(A.dtype() == DType::Float32 || A.dtype() == DType::Float64 || is_complex(A.dtype()),
                             "\"triangular_solve_cpu\" not implemented for '", dtype_word(A.dtype()), "'");
  KILN_CHECK(B.dtype() == A.dtype() && batch_shape(A) == batch_shape(B), caller,
             ": internal: B must be a batch of matrices of A's dtype and batch shape");
  const Tensor a = A.contiguous();
  Tensor x = empty(B.sizes(), B.dtype(), B.device());
  x.copy_(B);
  if (x.numel() == 0 || x.impl()->is_meta()) return x;  // meta: the checks above are the meta function
  const int64_t batches = batch_count(A);
  const CBLAS_SIDE side = left ? CblasLeft : CblasRight;
  const CBLAS_UPLO uplo = upper ? CblasUpper : CblasLower;
  const CBLAS_DIAG diag = unitriangular ? CblasUnit : CblasNonUnit;
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lu_type<T>) {
      for (int64_t b = 0; b < batches; ++b) {
        trsm(side, uplo, diag, checked_int(rows), checked_int(cols), a.data_ptr<T>() + b * n * n, checked_int(n),
             x.data_ptr<T>() + b * rows * cols);
      }
    }
  });
  return x;
}

}  // namespace kiln::native
