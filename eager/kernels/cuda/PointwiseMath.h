// The pointwise ops that have eager CUDA kernels, and where their math comes from.
//
// One row per op: its name (ops.yaml's base name), arity, how its iterator is
// built, which dtypes it takes, and a CUDA C++ expression over `a` (and `b`,
// `alpha`) in the compute type A. The math itself comes from the compiler's
// table (codegen/PointwiseMath.h) through the generator codegen/cuda installs
// (Note [Eager CUDA pointwise math from the compiler's table]); the row's
// expression is the template KernelSources.h instantiates for what the table
// does not cover (and when no generator is installed: C++ tests).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eager/core/DType.h"
#include "eager/core/Scalar.h"
#include "eager/kernels/cuda/KernelSources.h"

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
  /// The op's Scalar argument other than alpha (threshold_backward's `threshold`), or empty. The
  /// template reads it as a constant of that name in A (the kernel's double parameter).
  std::string scalar_argument;
};

[[nodiscard]] const std::vector<PointwiseMath>& pointwise_math_table();
/// The row for `name`, or nullptr.
[[nodiscard]] const PointwiseMath* find_pointwise_math(const std::string& name);
[[nodiscard]] bool dtype_in_set(DType dtype, DtypeSet set);

// Note [Eager CUDA pointwise math from the compiler's table]
// ----------------------------------------------------------
// DESIGN.md decision 11: one definition of each pointwise op's math, so CPU,
// LLVM and CUDA cannot disagree. That definition is codegen/PointwiseMath
// (kernel-IR expressions), which eager/kernels may not include (the folder
// order puts codegen above the kernels). So the dependency is inverted: the
// boxed CUDA pointwise kernel (CudaPointwiseKernels.cpp) keeps what is eager's
// (the schema's overloads, the CPU's TensorIterator builders for promotion,
// broadcasting, out= and in-place checks) and asks a generator for the kernel
// of (op, the dtypes the iterator hands it, the result dtype, alpha, threshold,
// approximate). codegen/cuda installs that generator when kiln._C loads
// (codegen/cuda/CudaEagerPointwise.h): it builds the op's one-node kernel IR
// from the table and prints it as CUDA C with this folder's Indexer ABI, so
// the kernel's math is the table's, cached per (source, arch) by
// eager/cuda/KernelCache like every template. Where the table has no entry
// for those dtypes (pow on float16, ...) or no generator is installed, the
// row's template below runs, as before.

/// What the boxed kernel asks the generator for.
struct PointwiseKernelRequest {
  std::string op;             ///< the row's name: "add", "exp", ...
  int arity = 1;
  DType input = DType::Float32;   ///< every operand's dtype as the iterator hands it to the kernel
  DType output = DType::Float32;  ///< the result's
  std::optional<Scalar> alpha;    ///< add, sub
  std::string approximate;        ///< gelu ("none" or "tanh"), else empty
  std::optional<Scalar> threshold;  ///< threshold_backward
};

/// A kernel taking (Indexer<arity + 1> ix, long long n), or nullopt where the table does not cover the request.
using PointwiseKernelGenerator = std::optional<KernelInstance> (*)(const PointwiseKernelRequest&);

/// Installs the generator (codegen/cuda, when kiln._C loads); nullptr uninstalls it.
void set_pointwise_kernel_generator(PointwiseKernelGenerator generator);
[[nodiscard]] PointwiseKernelGenerator pointwise_kernel_generator();

}  // namespace kiln::native::cuda_kernels
