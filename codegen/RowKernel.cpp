// Reduction fusion group -> row kernel IR.
#include "codegen/RowKernel.h"

#include <algorithm>
#include <limits>
#include <string>
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

/// Eager's norm_forward_typed (native_layer_norm / layer_norm: y, mean, rstd; _fused_rms_norm / rms_norm:
/// y, rstd) or norm_backward_input_typed (_norm_backward_input: dx) for one row as exprs, with eager's FMA
/// contractions (read from its AVX2 and AVX-512 builds): mean = sum(x) / n (0 for rms_norm, whose
/// d = x - 0 is x); var = sum of fma(d, d) / n with d = x - mean; rstd = 1 / sqrt(var + eps);
/// y = fma(d rstd, w, b), d rstd w, fma(d, rstd, b) or d rstd (weight and bias, weight, bias, neither).
/// Backward: gw = g w, xhat = (x - mean) rstd, a = sum(gw) / n (0 without a mean), c = sum of
/// fma(gw, xhat) / n, dx = rstd fma(-xhat, c, fma(g, w, -a)) (g - a without w). In a row's last partial
/// vector eager rounds the products it adds b and -a to before adding (fma_in_whole_vectors). Empty when
/// n is none of these (Note [Norms as row groups]).
std::vector<int32_t> lower_norm_rows(KernelBuilder& b, const ir::Node& n,
                                     const std::unordered_map<const ir::Value*, int32_t>& expr_of, int64_t cols) {
  const auto value = [&](std::string_view name) -> std::optional<int32_t> {
    const ir::Value* v = passes::value_argument(n, name);
    if (v == nullptr) return std::nullopt;
    return expr_of.at(v);
  };
  const std::optional<int32_t> x = value("input");
  if (!x) return {};
  const DType d = b.dtype(*x);
  const int64_t lanes = eager_vector_lanes(d);
  const int32_t count = b.constant(d, static_cast<double>(cols));
  const std::string kind = n.kind_name();
  const bool layer_norm = kind == "kiln::native_layer_norm" || kind == "kiln::layer_norm";
  if (layer_norm || kind == "kiln::_fused_rms_norm" || kind == "kiln::rms_norm") {
    const ir::Attribute* eps = passes::literal_argument(n, "eps");
    if (eps == nullptr || !(eps->kind() == ir::Attribute::Kind::Float || (!layer_norm && eps->is_none()))) return {};
    // rms_norm's eps None: the epsilon of the compute type (eager's fused_rms_norm_cpu)
    const double e = eps->is_none() ? (d == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                           : double(std::numeric_limits<float>::epsilon()))
                                    : eps->to_float();
    const std::optional<int32_t> mean =
        layer_norm ? std::optional(b.binary(ExprOp::Div, b.reduce(ExprOp::ReduceSum, *x, lanes), count)) : std::nullopt;
    const int32_t centered = mean ? b.binary(ExprOp::Sub, *x, *mean) : *x;
    const int32_t var = b.binary(ExprOp::Div, b.reduce_product(centered, centered, lanes), count);
    const int32_t rstd = b.binary(ExprOp::Div, b.constant(d, 1.0),
                                  b.unary(ExprOp::Sqrt, b.binary(ExprOp::Add, var, b.constant(d, e))));
    const std::optional<int32_t> w = value("weight"), bias = layer_norm ? value("bias") : std::nullopt;
    int32_t y = 0;
    if (w && bias) y = b.fma_in_whole_vectors(b.binary(ExprOp::Mul, centered, rstd), *w, *bias);
    else if (w) y = b.binary(ExprOp::Mul, b.binary(ExprOp::Mul, centered, rstd), *w);
    else if (bias) y = b.fma_in_whole_vectors(centered, rstd, *bias);
    else y = b.binary(ExprOp::Mul, centered, rstd);
    std::vector<int32_t> results = {y};
    if (mean && n.outputs().size() == 3) results.push_back(*mean);
    if (n.outputs().size() > 1) results.push_back(rstd);
    return results;
  }
  const std::optional<int32_t> g = value("grad_out"), mean = value("mean"), rstd = value("rstd");
  if (!g || !rstd) return {};
  const std::optional<int32_t> w = value("weight");
  const int32_t gw = w ? b.binary(ExprOp::Mul, *g, *w) : *g;
  const int32_t xhat = b.binary(ExprOp::Mul, mean ? b.binary(ExprOp::Sub, *x, *mean) : *x, *rstd);
  // eager's a is 0 without a mean (its sum of gw is not used)
  const int32_t a = mean ? b.binary(ExprOp::Div, b.reduce(ExprOp::ReduceSum, gw, lanes), count) : b.constant(d, 0.0);
  const int32_t c = b.binary(ExprOp::Div, b.reduce_product(gw, xhat, lanes), count);
  // eager's store loop computes g w - a as one fms (its sums loop rounds g w, which it also multiplies)
  const int32_t centered = w ? b.fma_in_whole_vectors(*g, *w, b.unary(ExprOp::Neg, a)) : b.binary(ExprOp::Sub, gw, a);
  const int32_t inner = b.fma(b.unary(ExprOp::Neg, xhat), c, centered);
  return {b.binary(ExprOp::Mul, *rstd, inner)};
}

/// eager's norm loops are FMA-contracted vector code: a row kernel matches them where the host has FMA.
bool host_has_fma() { return cpu_capability() == CpuCapability::AVX512 || cpu_capability() == CpuCapability::AVX2; }

}  // namespace

bool lowers_norm_whole(const ir::Node& n) {
  return n.kind() == ir::NodeKind::Op && passes::is_norm_row_kind(n.kind_name()) && host_has_fma() &&
         passes::fusible_reduction(n).has_value();
}

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
    if (group.norm_rows && passes::is_norm_row_kind(n->kind_name())) {
      const std::vector<int32_t> results = lower_norm_rows(b, *n, expr_of, rk.cols);
      if (results.empty()) return std::nullopt;
      for (size_t i = 0; i < results.size(); ++i) expr_of[n->output(i)] = results[i];
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
  if (group.norm_rows) {
    // eager's norm loops: FMA-contracted vector code (Note [Norms as row groups]), one vector width a kernel.
    if (!host_has_fma()) return std::nullopt;
    int64_t lanes = 0;
    for (const Expr& e : k.exprs) {
      if (!is_reduction(e.op)) continue;
      if (lanes != 0 && e.ivalue != lanes) return std::nullopt;
      lanes = e.ivalue;
    }
    k.norm_rows = true;
  }
  if (k.columns) {  // per reduction an accumulator row and a total row (Note [Column reduction kernels])
    for (const Expr& e : k.exprs) rk.scratch_rows += is_reduction(e.op) ? 2 : 0;
  } else {
    rk.scratch_rows = static_cast<int64_t>(schedule_rows(k).spilled.size());
  }
  return rk;
}

}  // namespace kiln::codegen
