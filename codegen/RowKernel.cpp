// Reduction fusion group -> row kernel IR.
#include "codegen/RowKernel.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/PointwiseMath.h"
#include "codegen/RowSchedule.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "passes/arguments.h"
#include "passes/fuse_column_reductions.h"

namespace kiln::codegen {

namespace {

std::vector<int64_t> concrete(const std::vector<ir::SymbolicSize>& s) {
  std::vector<int64_t> out;
  for (const auto& d : s) out.push_back(d.value());
  return out;
}

RowOperand operand_of(passes::RowShape s) {
  switch (s) {
    case passes::RowShape::Element: return RowOperand::Element;
    case passes::RowShape::PerRow: return RowOperand::PerRow;
    case passes::RowShape::PerColumn: return RowOperand::PerColumn;
    case passes::RowShape::Scalar: return RowOperand::Scalar;
  }
  return RowOperand::Scalar;
}

std::optional<ExprOp> reduce_op(const std::string& kind) {
  if (kind == "kiln::sum.dim_IntList") return ExprOp::ReduceSum;
  if (kind == "kiln::mean.dim") return ExprOp::ReduceMean;
  if (kind == "kiln::amax") return ExprOp::ReduceMax;
  if (kind == "kiln::amin") return ExprOp::ReduceMin;
  return std::nullopt;
}

/// Elements in a vector of the eager reduction kernels' build for this CPU (their Vec<T>::size:
/// eager/kernels/cpu/vec/Vec.h), which fixes the order they add a row in (Note [Row reduction kernels]).
int64_t eager_vector_lanes(DType d) {
  const int64_t bytes = cpu_capability() == CpuCapability::AVX512 ? 64 : cpu_capability() == CpuCapability::AVX2 ? 32 : 16;
  return bytes / static_cast<int64_t>(itemsize(d));
}

}  // namespace

std::optional<RowKernel> lower_reduction_group(const passes::ReductionGroup& group) {
  RowKernel rk;
  Kernel& k = rk.kernel;
  k.rows = true;
  k.columns = group.columns;
  k.rank = 2;  // [rows, cols]
  // A row group folds its trailing reduced_dims, a column group its leading ones.
  const size_t outer = group.columns ? group.reduced_dims : group.sizes.size() - group.reduced_dims;
  const auto shape_of = [&](const ir::Value* v, bool as_output) {
    return group.columns ? passes::column_shape_of(v, group.sizes, group.reduced_dims, as_output)
                         : passes::row_shape_of(v, group.sizes, group.reduced_dims, as_output);
  };
  rk.rows = 1;
  rk.cols = 1;
  for (size_t d = 0; d < group.sizes.size(); ++d) (d < outer ? rk.rows : rk.cols) *= group.sizes[d];
  for (const ir::Value* v : group.members.inputs) {
    const auto shape = shape_of(v, false);
    if (!shape) return std::nullopt;
    const ir::TensorType& t = v->type().tensor_type();
    k.input_dtypes.push_back(*t.dtype);
    k.input_roles.push_back(operand_of(*shape));
    rk.input_sizes.push_back(concrete(*t.sizes));
  }
  KernelBuilder b(k);
  std::unordered_map<const ir::Value*, int32_t> expr_of;
  for (size_t i = 0; i < group.members.inputs.size(); ++i) expr_of[group.members.inputs[i]] = b.load(static_cast<int32_t>(i));
  for (const ir::Node* n : group.members.nodes) {
    std::vector<int32_t> inputs;
    for (const ir::Value* v : n->inputs()) inputs.push_back(expr_of.at(v));
    if (group.norm_params && n->kind_name() == "kiln::_norm_backward_bias") {
      expr_of[n->output()] = b.reduce(ExprOp::ReduceSum, inputs.at(0), eager_vector_lanes(b.dtype(inputs.at(0))));
      continue;
    }
    if (group.norm_params && n->kind_name() == "kiln::_norm_backward_weight") {
      // xhat = (x - mean) * rstd (x * rstd without a mean, as eager's x - 0), folded as fma(g, xhat, acc).
      const auto value = [&](std::string_view name) -> std::optional<int32_t> {
        const ir::Value* v = passes::value_argument(*n, name);
        if (v == nullptr) return std::nullopt;
        return expr_of.at(v);
      };
      const int32_t g = *value("grad_out"), x = *value("input"), rstd = *value("rstd");
      const std::optional<int32_t> mean = value("mean");
      const int32_t centered = mean ? b.binary(ExprOp::Sub, x, *mean) : x;
      const int32_t xhat = b.binary(ExprOp::Mul, centered, rstd);
      expr_of[n->output()] = b.reduce_product(g, xhat, eager_vector_lanes(b.dtype(g)));
      continue;
    }
    if (const auto op = reduce_op(n->kind_name())) {
      expr_of[n->output()] = b.reduce(*op, inputs.at(0), eager_vector_lanes(b.dtype(inputs.at(0))));
      continue;
    }
    const std::optional<int32_t> e = build_pointwise_math(b, *n, inputs);
    if (!e) return std::nullopt;
    expr_of[n->output()] = *e;
  }
  for (const ir::Value* v : group.members.outputs) {
    const auto shape = shape_of(v, true);
    const passes::RowShape folded = group.columns ? passes::RowShape::PerColumn : passes::RowShape::PerRow;
    if (shape != passes::RowShape::Element && shape != folded) return std::nullopt;
    const ir::TensorType& t = v->type().tensor_type();
    k.output_dtypes.push_back(*t.dtype);
    k.output_roles.push_back(operand_of(*shape));
    k.outputs.push_back(expr_of.at(v));
    rk.output_sizes.push_back(concrete(*t.sizes));
    rk.output_strides.push_back(concrete(*t.strides));
  }
  if (group.norm_params) {
    // eager's norm_backward_params: FMA-contracted vector code (an fma per term) and its chunk rows
    // (rows_per_chunk in eager/kernels/cpu/nn/per_capability/NormKernel.cpp).
    if (cpu_capability() != CpuCapability::AVX512 && cpu_capability() != CpuCapability::AVX2) return std::nullopt;
    constexpr int64_t kMaxRowChunks = 256;
    const int64_t by_grain = (kGrainSize + rk.cols - 1) / std::max<int64_t>(rk.cols, 1);
    k.norm_chunk_rows = std::max<int64_t>({int64_t{1}, by_grain, (rk.rows + kMaxRowChunks - 1) / kMaxRowChunks});
  }
  if (k.columns) {  // per reduction an accumulator row and a total row (Note [Column reduction kernels])
    for (const Expr& e : k.exprs) rk.scratch_rows += is_reduction(e.op) ? 2 : 0;
  } else {
    rk.scratch_rows = static_cast<int64_t>(schedule_rows(k).spilled.size());
  }
  return rk;
}

}  // namespace kiln::codegen
