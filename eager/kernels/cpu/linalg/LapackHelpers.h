// What the LAPACK kernels share (Lapack.cpp: LU and solves; LapackDecompositions.cpp:
// Cholesky, QR, eigh, SVD; LapackRawFactors.cpp: geqrf, LDL^T): PyTorch's input checks and error prefixes, and the
// column-major copies LAPACK works in, workspace queries. A row-major matrix's transpose, made
// contiguous, is its column-major copy; results come back as transposed views
// of such buffers (column-major strides, as PyTorch's are).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"

namespace kiln::native::lapack {

/// PyTorch's name for a dtype in its error messages ("Float", "Long", ...).
inline const char* dtype_word(DType dtype) {
  switch (dtype) {
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Float64: return "Double";
    case DType::Int64: return "Long";
    case DType::Int32: return "Int";
    case DType::Int16: return "Short";
    case DType::Int8: return "Char";
    case DType::UInt8: return "Byte";
    case DType::Bool: return "Bool";
    case DType::Complex64: return "ComplexFloat";
    case DType::Complex128: return "ComplexDouble";
    default: return "Float";
  }
}

/// PyTorch's checks of a (batch of) float32/float64 matrices: at least two
/// dimensions, a floating dtype (RuntimeError otherwise), and not a reduced
/// one (NotImplementedError naming torch's kernel, `kernel`).
inline void check_float_matrices(std::string_view caller, std::string_view kernel, const Tensor& A) {
  KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(is_floating_point(A.dtype()), caller, ": Expected a floating point or complex tensor as input. Got ",
             dtype_word(A.dtype()));
  KILN_CHECK_NOT_IMPLEMENTED(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, "\"", kernel,
                             "\" not implemented for '", dtype_word(A.dtype()), "'");
}

/// As check_float_matrices, complex64/complex128 accepted too (the kernels with complex LAPACK calls).
inline void check_float_or_complex_matrices(std::string_view caller, std::string_view kernel, const Tensor& A) {
  if (is_complex(A.dtype())) {
    KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
    return;
  }
  check_float_matrices(caller, kernel, A);
}

/// As check_float_matrices, and every matrix square.
inline void check_square_float(std::string_view caller, std::string_view kernel, const Tensor& A) {
  KILN_CHECK(A.dim() >= 2, caller, ": The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(A.size(-1) == A.size(-2), caller, ": A must be batches of square matrices, but they are ", A.size(-2),
             " by ", A.size(-1), " matrices");
  check_float_matrices(caller, kernel, A);
}

/// A column-major copy of each matrix of `t` (..., rows, cols): a new contiguous (..., cols, rows)
/// tensor LAPACK may overwrite (always a copy: `t` is never written).
inline Tensor column_major(const Tensor& t) {
  const Tensor transposed = kiln::transpose(t, -2, -1);
  Tensor copy = empty(transposed.sizes(), t.dtype(), t.device());
  copy.copy_(transposed);
  return copy;
}

/// A new column-major buffer for (..., rows, cols) matrices: returned as its
/// contiguous (..., cols, rows) storage; transpose(-2, -1) gives the matrices.
inline Tensor column_major_empty(DimVector batch, int64_t rows, int64_t cols, DType dtype, Device device) {
  batch.push_back(cols);
  batch.push_back(rows);
  return empty(batch, dtype, device);
}

/// float and double: the element types LAPACK's s and d routines take.
template <typename T>
constexpr bool is_lapack_type = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// LAPACK returns a workspace size (lwork = -1 query) as a floating value; round it up to an int.
template <typename T>
int workspace_size(T query) {
  if constexpr (is_complex_v<T>) {
    return std::max(1, static_cast<int>(query.real()) + 1);  // complex routines return it as the real part
  } else {
    return std::max(1, static_cast<int>(query) + 1);
  }
}

inline int checked_int(int64_t v) {
  KILN_CHECK(v < int64_t{1} << 31, "LAPACK: a dimension of ", v, " does not fit its 32-bit integers");
  return static_cast<int>(v);
}

/// The batch dimensions of a batch of matrices.
inline DimVector batch_shape(const Tensor& A) {
  DimVector shape;
  for (int64_t d = 0; d < A.dim() - 2; ++d) shape.push_back(A.size(d));
  return shape;
}

/// How many matrices a batch holds.
inline int64_t batch_count(const Tensor& A) {
  int64_t count = 1;
  for (int64_t d = 0; d < A.dim() - 2; ++d) count *= A.size(d);
  return count;
}

/// The prefix PyTorch puts before a failure in one matrix of a batch.
inline std::string batch_prefix(const Tensor& A, int64_t b) {
  return A.dim() > 2 ? "(Batch element " + std::to_string(b) + "): " : "";
}

}  // namespace kiln::native::lapack
