// One definition of each pointwise op's math for the compiler (DESIGN.md
// decision 11): from an ir op node (its inputs' expressions, its attributes,
// its inputs' and output's dtypes) to a scalar expression in the kernel IR.
// codegen/llvm lowers these expressions; codegen/cuda will lower the same ones.
// See Note [Pointwise math matches eager].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/KernelIR.h"
#include "ir/Node.h"

namespace kiln::codegen {

// Note [Pointwise math matches eager]
// -----------------------------------
// Each entry reproduces the eager CPU kernel's scalar semantics
// (eager/kernels/cpu/pointwise/per_capability/*.cpp):
// - The op computes in the dtype TensorIterator would (the output dtype for
//   arithmetic and floating functions; the inputs' common dtype for
//   comparisons); float16/bfloat16 compute in float32 and round to their dtype
//   after each op (so a fused chain rounds where eager's ops store).
// - A Scalar argument is converted to the compute dtype as eager's
//   `Scalar::to<T>()` does; for float16/bfloat16 ops the operand scalar is
//   rounded through that dtype first (it is a wrapped-number operand), but
//   mul's and the divisions' (eager reads them at float precision: Note [CPU
//   scalars at opmath precision]) and alpha (eager reads it as a float).
// - maximum/minimum/clamp propagate NaN (`a != a ? a : (a > b ? a : b)`), relu
//   keeps NaN (`x < 0 ? 0 : x`), integer arithmetic wraps, division of
//   integers is true division in the floating output dtype.
// - Transcendentals use the eager kernels' vector math (codegen/llvm/VectorMath.h),
//   and products GCC fuses into an add are one Fma (Note [Contracted
//   multiply-adds], PointwiseMathOp.h). Ops eager computes with scalar libm
//   calls (lgamma, xlogy, logaddexp, ...) have no entry.
// An op, overload or dtype the table does not cover returns nullopt: the node
// stays an eager node.

/// True when `qualified_name` ("kiln::add.Tensor") has a table entry.
[[nodiscard]] bool has_pointwise_math(const std::string& qualified_name);
/// Every op name with a table entry, sorted.
[[nodiscard]] std::vector<std::string> pointwise_math_ops();

/// The expression of op node `n`'s single output, stored in its output dtype
/// (so `b.dtype(result)` is that dtype), given `inputs`: one expression per
/// node input, each in that input's dtype. nullopt when the op has no entry or
/// the entry does not cover these dtypes or attributes (the node stays eager).
[[nodiscard]] std::optional<int32_t> build_pointwise_math(KernelBuilder& b, const ir::Node& n,
                                                           const std::vector<int32_t>& inputs);

}  // namespace kiln::codegen
