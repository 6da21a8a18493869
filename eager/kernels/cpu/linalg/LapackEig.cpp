// The eigendecomposition of general square matrices (linalg_eig) on LAPACK's
// geev: OpenBLAS's sgeev/dgeev for real input, cgeev/zgeev for complex. The
// results are complex whatever the input: a real matrix's eigenvalues come in
// conjugate pairs, which sgeev/dgeev return as separate real and imaginary
// parts (wr, wi) and, for the eigenvectors, as two real columns (the real and
// imaginary parts of the first of the pair; the second is its conjugate).
// Eigenvectors have unit 2-norm with their largest component real, as LAPACK
// (and so PyTorch) returns them.
#include <cmath>
#include <complex>
#include <tuple>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/linalg/LapackHelpers.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

// LAPACK's Fortran entry points (32-bit integers: Debian's OpenBLAS builds).
// std::complex<T> has Fortran COMPLEX's layout (real, imaginary).
extern "C" {
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi,
            float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<float>* a, const int* lda,
            std::complex<float>* w, std::complex<float>* vl, const int* ldvl, std::complex<float>* vr,
            const int* ldvr, std::complex<float>* work, const int* lwork, float* rwork, int* info);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<double>* a, const int* lda,
            std::complex<double>* w, std::complex<double>* vl, const int* ldvl, std::complex<double>* vr,
            const int* ldvr, std::complex<double>* work, const int* lwork, double* rwork, int* info);
}

namespace kiln::native {

using namespace lapack;

namespace {

/// Real geev: wr/wi and the packed real eigenvector columns.
void geev(char jobvr, int n, float* a, float* wr, float* wi, float* vr, float* work, int lwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  sgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &n, work, &lwork, info);
}
void geev(char jobvr, int n, double* a, double* wr, double* wi, double* vr, double* work, int lwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  dgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &n, work, &lwork, info);
}
/// Complex geev: eigenvalues w and eigenvector columns vr directly.
void geev(char jobvr, int n, std::complex<float>* a, std::complex<float>* w, std::complex<float>* vr,
          std::complex<float>* work, int lwork, float* rwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  cgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &n, work, &lwork, rwork, info);
}
void geev(char jobvr, int n, std::complex<double>* a, std::complex<double>* w, std::complex<double>* vr,
          std::complex<double>* work, int lwork, double* rwork, int* info) {
  const char jobvl = 'N';
  const int one = 1;
  zgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &n, work, &lwork, rwork, info);
}

void check_converged(const Tensor& A, int64_t b, int status) {
  KILN_CHECK(status <= 0, "linalg.eig: ", batch_prefix(A, b), "The algorithm failed to converge because the input "
             "matrix is ill-conditioned or has too many repeated eigenvalues (error code: ", status, ").");
  KILN_CHECK(status == 0, "linalg.eig: LAPACK geev failed (info ", status, ")");
}

/// One real matrix (column-major `a`, overwritten): eigenvalues into w, eigenvectors into the
/// column-major complex buffer v (when compute_v).
template <typename T>
void eig_real(int n, T* a, std::complex<T>* w, std::complex<T>* v, bool compute_v, std::vector<T>& work,
              std::vector<T>& wr, std::vector<T>& wi, std::vector<T>& vr, int* status) {
  geev(compute_v ? 'V' : 'N', n, a, wr.data(), wi.data(), vr.data(), work.data(), static_cast<int>(work.size()),
       status);
  if (*status != 0) return;
  for (int j = 0; j < n; ++j) w[j] = {wr[j], wi[j]};
  if (!compute_v) return;
  const auto column = [&](int j) { return vr.data() + static_cast<int64_t>(j) * n; };
  for (int j = 0; j < n; ++j) {
    std::complex<T>* out = v + static_cast<int64_t>(j) * n;
    if (wi[j] == T(0)) {
      for (int i = 0; i < n; ++i) out[i] = {column(j)[i], T(0)};
      continue;
    }
    // A conjugate pair: columns j, j + 1 hold the real and imaginary parts of the first vector.
    std::complex<T>* next = out + n;
    for (int i = 0; i < n; ++i) {
      out[i] = {column(j)[i], column(j + 1)[i]};
      next[i] = std::conj(out[i]);
    }
    ++j;
  }
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_eig_cpu(const Tensor& A, bool compute_v) {
  KILN_CHECK(A.dim() >= 2, "linalg.eig: The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), "linalg.eig: A must be batches of square matrices, but they are ", A.size(-2),
             " by ", A.size(-1), " matrices");
  const DType dtype = A.dtype();
  KILN_CHECK_NOT_IMPLEMENTED(dtype == DType::Float32 || dtype == DType::Float64 || is_complex(dtype),
                             "\"linalg_eig_make_complex_eigenvectors\" not implemented for '", dtype_word(dtype), "'");
  KILN_CHECK(A.impl()->is_meta() || *kiln::all(kiln::isfinite(A)).data_ptr<bool>(),  // meta: values unknown
             "kiln.linalg.eig: input tensor should not contain infs or NaNs.");
  const DType complex_dtype = is_complex(dtype) ? dtype : to_complex_type(dtype);
  const int64_t n = A.size(-1);
  const int64_t batches = batch_count(A);
  Tensor a = column_major(A);  // geev overwrites it
  DimVector values_shape = batch_shape(A);
  values_shape.push_back(n);
  Tensor values = empty(values_shape, complex_dtype, A.device());
  Tensor vectors = column_major_empty(batch_shape(A), n, n, complex_dtype, A.device());
  sync_blas_threads();
  visit_dtype_and_complex(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0 || A.impl()->is_meta()) return;  // meta: the checks above are the meta function
    const int ni = checked_int(n);
    const char jobvr = compute_v ? 'V' : 'N';
    int status = 0;
    if constexpr (is_lapack_type<T>) {
      using C = std::complex<T>;
      std::vector<T> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
      std::vector<T> vr(compute_v ? static_cast<size_t>(n * n) : 1);
      T query = 0;
      geev(jobvr, ni, a.data_ptr<T>(), wr.data(), wi.data(), vr.data(), &query, -1, &status);
      std::vector<T> work(static_cast<size_t>(workspace_size(query)));
      for (int64_t b = 0; b < batches; ++b) {
        eig_real<T>(ni, a.data_ptr<T>() + b * n * n, values.data_ptr<C>() + b * n, vectors.data_ptr<C>() + b * n * n,
                    compute_v, work, wr, wi, vr, &status);
        check_converged(A, b, status);
      }
    } else if constexpr (is_complex_v<T>) {
      using V = typename T::value_type;
      std::vector<V> rwork(static_cast<size_t>(2 * n));
      T query = 0;
      geev(jobvr, ni, a.data_ptr<T>(), values.data_ptr<T>(), vectors.data_ptr<T>(), &query, -1, rwork.data(),
           &status);
      std::vector<T> work(static_cast<size_t>(workspace_size(query)));
      for (int64_t b = 0; b < batches; ++b) {
        geev(jobvr, ni, a.data_ptr<T>() + b * n * n, values.data_ptr<T>() + b * n, vectors.data_ptr<T>() + b * n * n,
             work.data(), static_cast<int>(work.size()), rwork.data(), &status);
        check_converged(A, b, status);
      }
    } else {
      KILN_FAIL(NotImplemented, "\"linalg_eig\" not implemented for '", dtype_word(dtype), "'");
    }
  });
  if (!compute_v) return {values, empty({0}, complex_dtype, A.device())};
  return {values, kiln::transpose(vectors, -2, -1)};
}

}  // namespace kiln::native
