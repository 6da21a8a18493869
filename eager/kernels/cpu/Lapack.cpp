// LU factorisation (linalg_lu_factor_ex) and linear solves (_linalg_solve) on
// LAPACK: OpenBLAS's sgetrf/dgetrf and sgesv/dgesv, one call per matrix of a
// batch. LAPACK is column-major: a row-major matrix's transpose, made
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
#include <string>
#include <string_view>
#include <tuple>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Blas.h"
#include "eager/kernels/cpu/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

// LAPACK's Fortran entry points (32-bit integers: Debian's OpenBLAS builds).
extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgesv_(const int* n, const int* nrhs, float* a, const int* lda, int* ipiv, float* b, const int* ldb, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb,
            int* info);
}

namespace kiln::native {

namespace {

void getrf(int n, float* a, int* ipiv, int* info) { sgetrf_(&n, &n, a, &n, ipiv, info); }
void getrf(int n, double* a, int* ipiv, int* info) { dgetrf_(&n, &n, a, &n, ipiv, info); }
void gesv(int n, int nrhs, float* a, int* ipiv, float* b, int* info) { sgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info); }
void gesv(int n, int nrhs, double* a, int* ipiv, double* b, int* info) {
  dgesv_(&n, &nrhs, a, &n, ipiv, b, &n, info);
}

const char* dtype_word(DType dtype) {
  switch (dtype) {
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Int64: return "Long";
    case DType::Int32: return "Int";
    case DType::Int16: return "Short";
    case DType::Int8: return "Char";
    case DType::UInt8: return "Byte";
    case DType::Bool: return "Bool";
    default: return "Float";
  }
}

/// PyTorch's checks of a (batch of) square float32/float64 matrices.
void check_square_float(std::string_view caller, const Tensor& A) {
  KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), caller, ": A must be batches of square matrices, but they are ", A.size(-2),
             " by ", A.size(-1), " matrices");
  KILN_CHECK(is_floating_point(A.dtype()), caller, ": Expected a floating point or complex tensor as input. Got ",
             dtype_word(A.dtype()));
  KILN_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, caller, ": not implemented for '",
             dtype_word(A.dtype()), "'");
}

/// A column-major copy of each matrix of `t` (..., rows, cols): a new contiguous (..., cols, rows)
/// tensor LAPACK may overwrite (always a copy: `t` is never written).
Tensor column_major(const Tensor& t) {
  const Tensor transposed = kiln::transpose(t, -2, -1);
  Tensor copy = empty(transposed.sizes(), t.dtype(), t.device());
  copy.copy_(transposed);
  return copy;
}

int checked_int(int64_t v) {
  KILN_CHECK(v <= int64_t{1} << 31, "LAPACK: a dimension of ", v, " does not fit its 32-bit integers");
  return static_cast<int>(v);
}

/// The prefix PyTorch puts before a failure in one matrix of a batch.
std::string batch_prefix(const Tensor& A, int64_t b) {
  return A.dim() > 2 ? "(Batch element " + std::to_string(b) + "): " : "";
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex_cpu(const Tensor& A, bool pivot, bool check_errors) {
  check_square_float("torch.linalg.lu_factor_ex", A);
  KILN_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  const int64_t n = A.size(-1);
  Tensor lu = column_major(A);
  DimVector batch_shape;
  for (int64_t d = 0; d < A.dim() - 2; ++d) batch_shape.push_back(A.size(d));
  const int64_t batches = lu.numel() / std::max<int64_t>(n * n, 1);
  DimVector pivot_shape(batch_shape);
  pivot_shape.push_back(n);
  Tensor pivots = empty(pivot_shape, DType::Int32, A.device());
  Tensor info = zeros(batch_shape, DType::Int32, A.device());
  sync_blas_threads();
  visit_dtype(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      for (int64_t b = 0; b < batches && n > 0; ++b) {
        int status = 0;
        getrf(checked_int(n), lu.data_ptr<T>() + b * n * n, pivots.data_ptr<int32_t>() + b * n, &status);
        info.data_ptr<int32_t>()[b] = status;
        KILN_CHECK(!(check_errors && status > 0), "torch.linalg.lu_factor_ex: ", batch_prefix(A, b),
                   "U[", status, ",", status, "] is zero and using it on lu_solve would result in a division by "
                   "zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                   "linalg.lu_factor_ex(A, pivot)");
      }
    }
  });
  return {kiln::transpose(lu, -2, -1), pivots, info};
}

Tensor linalg_solve_cpu(const Tensor& A, const Tensor& B, std::string_view caller) {
  check_square_float(caller, A);
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
  if (n == 0 || k == 0) return kiln::transpose(x, -2, -1);
  Tensor pivots = empty({n}, DType::Int32, A.device());
  sync_blas_threads();
  visit_dtype(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
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

}  // namespace kiln::native
