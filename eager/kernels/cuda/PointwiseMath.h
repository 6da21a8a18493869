// The scalar math of the pointwise ops that have eager CUDA kernels.
//
// One row per op: its name (ops.yaml's base name), arity, the CUDA C++
// expression over `a` (and `b`, `alpha`) in the compute type A, and which
// dtypes it takes. DESIGN.md decision 11 wants one definition shared with the
// compiler's backends; until the compiler's table exists this is the CUDA
// side's single list, and KernelSources.h instantiates every row.
#pragma once

#include <string>
#include <vector>

#include "eager/core/DType.h"

namespace kiln::native::cuda_kernels {

/// How the op's TensorIterator is built (the CPU kernel's iterator, reused).
enum class PointwiseKind {
  UnaryFloat,      ///< unary_float_iterator: integers compute in the default float dtype
  UnarySame,       ///< unary_same_dtype_iterator: computes in self's dtype
  Binary,          ///< binary_op_iterator: common dtype
  BinaryFloat,     ///< binary_op_iterator with integer_to_float (true division)
  Comparison,      ///< comparison_op_iterator: bool result
};

/// Which compute dtypes an op accepts.
enum class DtypeSet { All, NoBool, Floating, Integral };

struct PointwiseMath {
  std::string name;
  int arity;
  std::string expr;
  PointwiseKind kind;
  DtypeSet dtypes;
  bool has_alpha = false;  ///< add, sub: the Scalar alpha multiplies `b`
};

[[nodiscard]] const std::vector<PointwiseMath>& pointwise_math_table();
/// The row for `name`, or nullptr.
[[nodiscard]] const PointwiseMath* find_pointwise_math(const std::string& name);
[[nodiscard]] bool dtype_in_set(DType dtype, DtypeSet set);

}  // namespace kiln::native::cuda_kernels
