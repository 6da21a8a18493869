// LAPACK's factorisations in the raw form torch exposes them: geqrf's
// Householder reflectors with tau (torch.geqrf), and the symmetric indefinite
// (Bunch-Kaufman) LDL^T factorisation, sytrf, with its solve, sytrs
// (torch.linalg.ldl_factor_ex / ldl_solve). Each matrix of a batch is one
// call on a column-major copy (LapackHelpers.h); the factors come back as the
// transposes of those copies, with torch's column-major strides. No
// derivatives, as in torch. The Python spellings, ormqr and the error turning
// of info live in python/kiln/linalg/_raw_factors.py.
#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/linalg/LapackHelpers.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

// LAPACK's Fortran entry points (32-bit integers: Debian's OpenBLAS builds).
extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work, const int* lwork,
             int* info);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work, const int* lwork,
             int* info);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info);
}

namespace kiln::native {

using namespace lapack;

namespace {

void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void sytrf(int n, float* a, int* ipiv, float* work, int lwork, int* info) {
  const char uplo = 'L';
  ssytrf_(&uplo, &n, a, &n, ipiv, work, &lwork, info);
}
void sytrf(int n, double* a, int* ipiv, double* work, int lwork, int* info) {
  const char uplo = 'L';
  dsytrf_(&uplo, &n, a, &n, ipiv, work, &lwork, info);
}
void sytrs(int n, int nrhs, const float* a, const int* ipiv, float* b, int* info) {
  const char uplo = 'L';
  ssytrs_(&uplo, &n, &nrhs, a, &n, ipiv, b, &n, info);
}
void sytrs(int n, int nrhs, const double* a, const int* ipiv, double* b, int* info) {
  const char uplo = 'L';
  dsytrs_(&uplo, &n, &nrhs, a, &n, ipiv, b, &n, info);
}

DimVector with_last(DimVector shape, int64_t last) {
  shape.push_back(last);
  return shape;
}

}  // namespace

std::tuple<Tensor, Tensor> geqrf_cpu(const Tensor& A) {
  KILN_CHECK(A.dim() >= 2, "kiln.geqrf: input must have at least 2 dimensions.");
  KILN_CHECK_NOT_IMPLEMENTED(A.dtype() == DType::Float32 || A.dtype() == DType::Float64,
                             "\"geqrf_cpu\" not implemented for '", dtype_word(A.dtype()), "'");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const int64_t batches = batch_count(A);
  Tensor a = column_major(A);
  Tensor tau = empty(with_last(batch_shape(A), k), A.dtype(), A.device());
  if (k == 0 || batches == 0 || A.impl()->is_meta()) return {kiln::transpose(a, -2, -1), tau};  // meta: the checks
  sync_blas_threads();
  visit_dtype(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_type<T>) {
      int status = 0;
      T query = 0;
      geqrf(checked_int(m), checked_int(n), a.data_ptr<T>(), tau.data_ptr<T>(), &query, -1, &status);
      const int lwork = workspace_size(query);
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = 0; b < batches; ++b) {
        geqrf(checked_int(m), checked_int(n), a.data_ptr<T>() + b * m * n, tau.data_ptr<T>() + b * k, work.data(),
              lwork, &status);
        KILN_CHECK(status == 0, "kiln.geqrf: ", batch_prefix(A, b), "LAPACK geqrf failed (info ", status, ")");
      }
    }
  });
  return {kiln::transpose(a, -2, -1), tau};
}

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex_cpu(const Tensor& A, bool hermitian, bool check_errors) {
  (void)hermitian;  // real matrices: the Hermitian and the symmetric factorisations are the same
  check_square_float("kiln.linalg.ldl_factor_ex", "ldl_factor_cpu", A);
  const int64_t n = A.size(-1);
  const int64_t batches = batch_count(A);
  Tensor ld = column_major(A);  // sytrf reads and writes the lower triangle
  Tensor pivots = empty(with_last(batch_shape(A), n), DType::Int32, A.device());
  Tensor info = zeros(batch_shape(A), DType::Int32, A.device());
  if (n == 0 || batches == 0 || A.impl()->is_meta()) return {kiln::transpose(ld, -2, -1), pivots, info};  // meta
  sync_blas_threads();
  visit_dtype(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_type<T>) {
      int status = 0;
      T query = 0;
      sytrf(checked_int(n), ld.data_ptr<T>(), pivots.data_ptr<int32_t>(), &query, -1, &status);
      const int lwork = workspace_size(query);
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = 0; b < batches; ++b) {
        T* m = ld.data_ptr<T>() + b * n * n;
        sytrf(checked_int(n), m, pivots.data_ptr<int32_t>() + b * n, work.data(), lwork, &status);
        info.data_ptr<int32_t>()[b] = status;
        KILN_CHECK(!(check_errors && status > 0), "kiln.linalg.ldl_factor_ex: ", batch_prefix(A, b),
                   "The factorization could not be completed because the input is singular (the ", status,
                   "-th diagonal element of D is zero).");
        for (int64_t col = 1; col < n; ++col) {  // torch zeroes the strictly upper triangle sytrf left as it was
          for (int64_t row = 0; row < col; ++row) m[col * n + row] = T(0);
        }
      }
    }
  });
  return {kiln::transpose(ld, -2, -1), pivots, info};
}

Tensor linalg_ldl_solve_cpu(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  (void)hermitian;
  constexpr std::string_view caller = "kiln.linalg.ldl_solve";
  KILN_CHECK(LD.dim() >= 2, caller, ": The input tensor LD must have at least 2 dimensions.");
  KILN_CHECK(B.dim() >= 2, caller, ": The input tensor B must have at least 2 dimensions.");
  KILN_CHECK(LD.size(-1) == LD.size(-2), caller, ": LD must be batches of square matrices, but they are ",
             LD.size(-2), " by ", LD.size(-1), " matrices");
  const int64_t n = LD.size(-1), k = B.size(-1);
  KILN_CHECK(B.size(-2) == n, "Incompatible matrix sizes for ", caller, ": each A matrix is ", n, " by ", n,
             " but each b matrix is ", B.size(-2), " by ", k);
  KILN_CHECK(pivots.dtype() == DType::Int32, caller, ": Expected pivots to be integers. Got ",
             dtype_word(pivots.dtype()));
  KILN_CHECK(B.dtype() == LD.dtype(), caller, ": Expected LD and B to have the same dtype, but got LD with dtype ",
             dtype_word(LD.dtype()), " and B with dtype ", dtype_word(B.dtype()), " instead");
  check_float_matrices(caller, "ldl_solve_cpu", LD);
  KILN_CHECK(batch_shape(LD) == batch_shape(B) && pivots.dim() == LD.dim() - 1 && pivots.size(-1) == n, caller,
             ": internal: LD, pivots and B must share their batch shape");
  const Tensor a = column_major(LD);
  const Tensor piv = pivots.contiguous();
  Tensor x = column_major(B);
  const int64_t batches = batch_count(LD);
  // meta: the checks above are the meta function (the pivots' range is checked where their values are read)
  if (n == 0 || k == 0 || batches == 0 || x.impl()->is_meta()) return kiln::transpose(x, -2, -1);
  visit_dtype(LD.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_type<T>) {
      for (int64_t b = 0; b < batches; ++b) {
        const int32_t* p = piv.data_ptr<int32_t>() + b * n;
        for (int64_t i = 0; i < n; ++i) {  // sytrs trusts the pivots; a bad one would index out of the matrix
          KILN_CHECK_INDEX(p[i] != 0 && p[i] <= n && p[i] >= -n, caller, ": ", batch_prefix(LD, b), "pivot ", p[i],
                           " at position ", i + 1, " is out of range for a matrix of size ", n);
        }
        int status = 0;
        sytrs(checked_int(n), checked_int(k), a.data_ptr<T>() + b * n * n, p, x.data_ptr<T>() + b * n * k, &status);
        KILN_CHECK(status == 0, caller, ": ", batch_prefix(LD, b), "LAPACK sytrs failed (info ", status, ")");
      }
    }
  });
  return kiln::transpose(x, -2, -1);
}

}  // namespace kiln::native
