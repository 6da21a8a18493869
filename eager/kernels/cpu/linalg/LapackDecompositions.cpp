// Matrix decompositions on LAPACK (OpenBLAS's): Cholesky (potrf), QR (geqrf
// then orgqr), the symmetric eigendecomposition (syevd) and the SVD (gesdd,
// PyTorch's default CPU driver), one call per matrix of a batch, each on a
// column-major copy (LapackHelpers.h). Their gradients are formulas over
// other ops (eager/autograd/LinalgFormulas.h, Note [Decomposition gradients]).
// The Python entry points (python/kiln/linalg/_decompositions.py) turn the
// failures reported here into LinAlgError, as torch.linalg does.
#include <complex>
#include <string>
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
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
// The complex forms (std::complex<T> has Fortran COMPLEX's layout): Hermitian where the real ones are symmetric.
using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
void cpotrf_(const char* uplo, const int* n, cfloat* a, const int* lda, int* info);
void zpotrf_(const char* uplo, const int* n, cdouble* a, const int* lda, int* info);
void cgeqrf_(const int* m, const int* n, cfloat* a, const int* lda, cfloat* tau, cfloat* work, const int* lwork,
             int* info);
void zgeqrf_(const int* m, const int* n, cdouble* a, const int* lda, cdouble* tau, cdouble* work, const int* lwork,
             int* info);
void cungqr_(const int* m, const int* n, const int* k, cfloat* a, const int* lda, const cfloat* tau, cfloat* work,
             const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, cdouble* a, const int* lda, const cdouble* tau, cdouble* work,
             const int* lwork, int* info);
void cheevd_(const char* jobz, const char* uplo, const int* n, cfloat* a, const int* lda, float* w, cfloat* work,
             const int* lwork, float* rwork, const int* lrwork, int* iwork, const int* liwork, int* info);
void zheevd_(const char* jobz, const char* uplo, const int* n, cdouble* a, const int* lda, double* w, cdouble* work,
             const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork, int* info);
void cgesdd_(const char* jobz, const int* m, const int* n, cfloat* a, const int* lda, float* s, cfloat* u,
             const int* ldu, cfloat* vt, const int* ldvt, cfloat* work, const int* lwork, float* rwork, int* iwork,
             int* info);
void zgesdd_(const char* jobz, const int* m, const int* n, cdouble* a, const int* lda, double* s, cdouble* u,
             const int* ldu, cdouble* vt, const int* ldvt, cdouble* work, const int* lwork, double* rwork,
             int* iwork, int* info);
}

namespace kiln::native {

using namespace lapack;

namespace {

// One overload per dtype for each routine; `lwork == -1` asks for the workspace size.
void potrf(char uplo, int n, float* a, int* info) { spotrf_(&uplo, &n, a, &n, info); }
void potrf(char uplo, int n, double* a, int* info) { dpotrf_(&uplo, &n, a, &n, info); }
void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void syevd(char jobz, char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork, int liwork,
           int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
void syevd(char jobz, char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork, int liwork,
           int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
void gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt, float* work,
           int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt, double* work,
           int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}

void potrf(char uplo, int n, cfloat* a, int* info) { cpotrf_(&uplo, &n, a, &n, info); }
void potrf(char uplo, int n, cdouble* a, int* info) { zpotrf_(&uplo, &n, a, &n, info); }
void geqrf(int m, int n, cfloat* a, cfloat* tau, cfloat* work, int lwork, int* info) {
  cgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, cdouble* a, cdouble* tau, cdouble* work, int lwork, int* info) {
  zgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, cfloat* a, const cfloat* tau, cfloat* work, int lwork, int* info) {
  cungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, cdouble* a, const cdouble* tau, cdouble* work, int lwork, int* info) {
  zungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void heevd(char jobz, char uplo, int n, cfloat* a, float* w, cfloat* work, int lwork, float* rwork, int lrwork,
           int* iwork, int liwork, int* info) {
  cheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info);
}
void heevd(char jobz, char uplo, int n, cdouble* a, double* w, cdouble* work, int lwork, double* rwork, int lrwork,
           int* iwork, int liwork, int* info) {
  zheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info);
}
void gesdd(char jobz, int m, int n, cfloat* a, float* s, cfloat* u, int ldu, cfloat* vt, int ldvt, cfloat* work,
           int lwork, float* rwork, int* iwork, int* info) {
  cgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info);
}
void gesdd(char jobz, int m, int n, cdouble* a, double* s, cdouble* u, int ldu, cdouble* vt, int ldvt,
           cdouble* work, int lwork, double* rwork, int* iwork, int* info) {
  zgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info);
}

/// float, double and their complex forms: what the routines above take.
template <typename T>
constexpr bool is_lapack_or_complex = is_lapack_type<T> || std::is_same_v<T, cfloat> || std::is_same_v<T, cdouble>;

/// The dtype of a decomposition's real outputs (eigenvalues, singular values).
DType real_dtype(DType dtype) { return is_complex(dtype) ? to_real_value_type(dtype) : dtype; }

/// Zeroes the triangle of each column-major n x n matrix a factorisation left unused
/// (above the diagonal for a lower factor, below it for an upper one).
template <typename T>
void zero_other_triangle(T* a, int64_t n, int64_t batches, bool keep_lower) {
  for (int64_t b = 0; b < batches; ++b) {
    T* m = a + b * n * n;
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t row = 0; row < n; ++row) {
        if (keep_lower ? row < col : row > col) m[col * n + row] = T(0);
      }
    }
  }
}

/// Each matrix of a column-major (..., n, n) buffer set to the identity.
template <typename T>
void fill_identity(T* a, int64_t n, int64_t cols, int64_t batches) {
  for (int64_t b = 0; b < batches; ++b) {
    T* m = a + b * n * cols;
    for (int64_t i = 0; i < n * cols; ++i) m[i] = T(0);
    for (int64_t i = 0; i < std::min(n, cols); ++i) m[i * n + i] = T(1);
  }
}

Tensor empty_like_dtype(const Tensor& A) { return empty({0}, A.dtype(), A.device()); }

}  // namespace

std::tuple<Tensor, Tensor> linalg_cholesky_ex_cpu(const Tensor& A, bool upper, bool check_errors) {
  KILN_CHECK(A.dim() >= 2, "linalg.cholesky: The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), "linalg.cholesky: A must be batches of square matrices, but they are ",
             A.size(-2), " by ", A.size(-1), " matrices");
  check_float_or_complex_matrices("linalg.cholesky", "cholesky_cpu", A);
  const int64_t n = A.size(-1);
  const int64_t batches = batch_count(A);
  Tensor factor = column_major(A);
  Tensor info = zeros(batch_shape(A), DType::Int32, A.device());
  // meta: the checks above are the meta function (Note [Meta kernels], tools/opgen)
  if (A.impl()->is_meta()) return {kiln::transpose(factor, -2, -1), info};
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_or_complex<T>) {
      T* data = factor.data_ptr<T>();
      for (int64_t b = 0; b < batches && n > 0; ++b) {
        int status = 0;
        potrf(upper ? 'U' : 'L', checked_int(n), data + b * n * n, &status);
        info.data_ptr<int32_t>()[b] = status;
        KILN_CHECK(!(check_errors && status > 0), "linalg.cholesky: ", batch_prefix(A, b),
                   "The factorization could not be completed because the input is not positive-definite (the "
                   "leading minor of order ", status, " is not positive-definite).");
      }
      zero_other_triangle(data, n, batches, !upper);
    }
  });
  return {kiln::transpose(factor, -2, -1), info};
}

std::tuple<Tensor, Tensor> linalg_qr_cpu(const Tensor& A, std::string_view mode) {
  KILN_CHECK(mode == "reduced" || mode == "r" || mode == "complete", "qr received unrecognized mode '", mode,
             "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_float_or_complex_matrices("linalg.qr", "geqrf_cpu", A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const int64_t batches = batch_count(A);
  const bool complete = mode == "complete";
  const int64_t q_cols = complete ? m : k;  // Q is m x q_cols
  const int64_t r_rows = complete ? m : k;  // R is r_rows x n
  Tensor a = column_major(A);                  // geqrf's in-place result: R above, reflectors below
  Tensor tau = empty({std::max<int64_t>(batches * k, 1)}, A.dtype(), A.device());
  Tensor q = column_major_empty(batch_shape(A), m, q_cols, A.dtype(), A.device());
  DimVector r_shape = batch_shape(A);
  r_shape.push_back(r_rows);
  r_shape.push_back(n);
  Tensor r = zeros(r_shape, A.dtype(), A.device());
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_or_complex<T>) {
      if (A.impl()->is_meta()) return;  // the checks above are the meta function
      if (k == 0) {
        fill_identity(q.data_ptr<T>(), m, q_cols, batches);
        return;
      }
      int status = 0;
      T query = 0;
      geqrf(checked_int(m), checked_int(n), a.data_ptr<T>(), tau.data_ptr<T>(), &query, -1, &status);
      int lwork = workspace_size(query);
      orgqr(checked_int(m), checked_int(q_cols), checked_int(k), q.data_ptr<T>(), tau.data_ptr<T>(), &query, -1,
            &status);
      lwork = std::max(lwork, workspace_size(query));
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = 0; b < batches; ++b) {
        T* ab = a.data_ptr<T>() + b * m * n;
        T* taub = tau.data_ptr<T>() + b * k;
        geqrf(checked_int(m), checked_int(n), ab, taub, work.data(), lwork, &status);
        KILN_CHECK(status == 0, "linalg.qr: ", batch_prefix(A, b), "LAPACK geqrf failed (info ", status, ")");
        T* rb = r.data_ptr<T>() + b * r_rows * n;  // row-major R: its upper triangle from a's
        for (int64_t row = 0; row < std::min(r_rows, m); ++row) {
          for (int64_t col = row; col < n; ++col) rb[row * n + col] = ab[col * m + row];
        }
        if (mode == "r") continue;
        T* qb = q.data_ptr<T>() + b * m * q_cols;  // the reflectors, then orgqr forms Q from them
        for (int64_t i = 0; i < m * std::min(q_cols, n); ++i) qb[i] = ab[i];
        for (int64_t i = m * std::min(q_cols, n); i < m * q_cols; ++i) qb[i] = T(0);
        orgqr(checked_int(m), checked_int(q_cols), checked_int(k), qb, taub, work.data(), lwork, &status);
        KILN_CHECK(status == 0, "linalg.qr: ", batch_prefix(A, b), "LAPACK orgqr failed (info ", status, ")");
      }
    }
  });
  if (mode == "r") return {empty_like_dtype(A), r};
  return {kiln::transpose(q, -2, -1), r};
}

std::tuple<Tensor, Tensor> linalg_eigh_cpu(const Tensor& A, std::string_view UPLO, bool compute_v) {
  KILN_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u",
             "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  KILN_CHECK(A.dim() >= 2, "linalg.eigh: The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), "linalg.eigh: A must be batches of square matrices, but they are ",
             A.size(-2), " by ", A.size(-1), " matrices");
  KILN_CHECK_NOT_IMPLEMENTED(A.dtype() == DType::Float32 || A.dtype() == DType::Float64 || is_complex(A.dtype()),
                             "\"linalg_eigh_cpu\" not implemented for '", dtype_word(A.dtype()), "'");
  const int64_t n = A.size(-1);
  const int64_t batches = batch_count(A);
  const char uplo = (UPLO == "U" || UPLO == "u") ? 'U' : 'L';
  Tensor vectors = column_major(A);  // syevd overwrites it with the eigenvectors
  DimVector values_shape = batch_shape(A);
  values_shape.push_back(n);
  Tensor values = empty(values_shape, real_dtype(A.dtype()), A.device());
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_or_complex<T>) {
      if (n == 0 || A.impl()->is_meta()) return;  // meta: the checks above are the meta function
      const char jobz = compute_v ? 'V' : 'N';
      int status = 0, iquery = 0;
      T query = 0;
      using R = decltype(std::abs(T{}));  // the real type: eigenvalues, and heevd's rwork
      R rquery = 0;
      R* w = values.data_ptr<R>();
      if constexpr (is_complex_v<T>) {
        heevd(jobz, uplo, checked_int(n), vectors.data_ptr<T>(), w, &query, -1, &rquery, -1, &iquery, -1, &status);
      } else {
        syevd(jobz, uplo, checked_int(n), vectors.data_ptr<T>(), w, &query, -1, &iquery, -1, &status);
      }
      const int lwork = workspace_size(query), liwork = std::max(1, iquery), lrwork = workspace_size(rquery);
      std::vector<T> work(static_cast<size_t>(lwork));
      std::vector<int> iwork(static_cast<size_t>(liwork));
      std::vector<R> rwork(is_complex_v<T> ? static_cast<size_t>(lrwork) : 0);
      for (int64_t b = 0; b < batches; ++b) {
        if constexpr (is_complex_v<T>) {
          heevd(jobz, uplo, checked_int(n), vectors.data_ptr<T>() + b * n * n, w + b * n, work.data(), lwork,
                rwork.data(), lrwork, iwork.data(), liwork, &status);
        } else {
          syevd(jobz, uplo, checked_int(n), vectors.data_ptr<T>() + b * n * n, w + b * n, work.data(), lwork,
                iwork.data(), liwork, &status);
        }
        KILN_CHECK(status <= 0, "linalg.eigh: ", batch_prefix(A, b),
                   "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                   "repeated eigenvalues (error code: ", status, ").");
        KILN_CHECK(status == 0, "linalg.eigh: LAPACK syevd failed (info ", status, ")");
      }
    }
  });
  if (!compute_v) return {values, empty_like_dtype(A)};
  return {values, kiln::transpose(vectors, -2, -1)};
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd_cpu(const Tensor& A, bool full_matrices, bool compute_uv) {
  check_float_or_complex_matrices("linalg.svd", "linalg_svd_cpu", A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const int64_t batches = batch_count(A);
  const int64_t u_cols = full_matrices ? m : k;  // U is m x u_cols
  const int64_t v_rows = full_matrices ? n : k;  // Vh is v_rows x n
  Tensor a = column_major(A);
  DimVector s_shape = batch_shape(A);
  s_shape.push_back(k);
  Tensor s = empty(s_shape, real_dtype(A.dtype()), A.device());
  Tensor u = column_major_empty(batch_shape(A), m, compute_uv ? u_cols : 0, A.dtype(), A.device());
  Tensor vt = column_major_empty(batch_shape(A), compute_uv ? v_rows : 0, n, A.dtype(), A.device());
  sync_blas_threads();
  visit_dtype_and_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lapack_or_complex<T>) {
      if (A.impl()->is_meta()) return;  // the checks above are the meta function
      if (k == 0) {  // an empty matrix: the full bases are identities
        if (compute_uv) {
          fill_identity(u.data_ptr<T>(), m, u_cols, batches);
          fill_identity(vt.data_ptr<T>(), v_rows, n, batches);
        }
        return;
      }
      const char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
      const int ldu = checked_int(m), ldvt = checked_int(std::max<int64_t>(v_rows, 1));
      T* u_data = compute_uv ? u.data_ptr<T>() : nullptr;
      T* vt_data = compute_uv ? vt.data_ptr<T>() : nullptr;
      T dummy = 0;
      int status = 0;
      T query = 0;
      std::vector<int> iwork(static_cast<size_t>(8 * k));
      using R = decltype(std::abs(T{}));  // singular values, and gesdd's complex rwork
      R* sv = s.data_ptr<R>();
      // complex gesdd's rwork (LAPACK 3.7's bound for every jobz)
      const int64_t big = std::max(m, n);
      std::vector<R> rwork(is_complex_v<T> ? static_cast<size_t>(std::max<int64_t>(
                                                 5 * k * k + 7 * k, 2 * big * k + 2 * k * k + k))
                                           : 0);
      auto call = [&](T* a_data, R* s_data, T* u_ptr, T* vt_ptr, T* work, int lwork) {
        if constexpr (is_complex_v<T>) {
          gesdd(jobz, checked_int(m), checked_int(n), a_data, s_data, u_ptr, ldu, vt_ptr, ldvt, work, lwork,
                rwork.data(), iwork.data(), &status);
        } else {
          gesdd(jobz, checked_int(m), checked_int(n), a_data, s_data, u_ptr, ldu, vt_ptr, ldvt, work, lwork,
                iwork.data(), &status);
        }
      };
      call(a.data_ptr<T>(), sv, u_data ? u_data : &dummy, vt_data ? vt_data : &dummy, &query, -1);
      const int lwork = workspace_size(query);
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = 0; b < batches; ++b) {
        call(a.data_ptr<T>() + b * m * n, sv + b * k, u_data ? u_data + b * m * u_cols : &dummy,
             vt_data ? vt_data + b * v_rows * n : &dummy, work.data(), lwork);
        KILN_CHECK(status <= 0, "linalg.svd: ", batch_prefix(A, b),
                   "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                   "repeated singular values (error code: ", status, ").");
        KILN_CHECK(status == 0, "linalg.svd: LAPACK gesdd failed (info ", status, ")");
      }
    }
  });
  if (!compute_uv) return {empty_like_dtype(A), s, empty_like_dtype(A)};
  return {kiln::transpose(u, -2, -1), s, kiln::transpose(vt, -2, -1)};
}

}  // namespace kiln::native
