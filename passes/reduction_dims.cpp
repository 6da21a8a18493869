// See reduction_dims.h.
#include "passes/reduction_dims.h"

#include <algorithm>

#include "passes/arguments.h"
#include "passes/type_facts.h"

namespace kiln::passes {

std::optional<std::vector<int64_t>> strided_cpu_sizes(const ir::Value* v) {
  if (!v->type().is_tensor()) return std::nullopt;
  const ir::TensorType& t = v->type().tensor_type();
  if (!t.dtype || !t.strides || !t.device.is_cpu()) return std::nullopt;
  for (const ir::SymbolicSize& s : *t.strides) {
    if (!s.is_concrete()) return std::nullopt;
  }
  return concrete_sizes(v);
}

std::optional<ReducedDims> literal_reduced_dims(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op || n.outputs().size() != 1 || n.inputs().size() != 1) return std::nullopt;
  const ir::Value* x = first_argument(n);
  if (x == nullptr || !is_contiguous(x) || !strided_cpu_sizes(n.output())) return std::nullopt;
  std::optional<std::vector<int64_t>> sizes = strided_cpu_sizes(x);
  if (!sizes) return std::nullopt;
  const auto dtype = dtype_of(x);
  if (!dtype || (*dtype != DType::Float32 && *dtype != DType::Float64) || dtype_of(n.output()) != dtype) {
    return std::nullopt;
  }
  const ir::Attribute* requested = literal_argument(n, "dtype");
  if (requested != nullptr && !requested->is_none()) return std::nullopt;
  const ir::Attribute* dim = literal_argument(n, "dim");
  if (dim == nullptr || dim->kind() != ir::Attribute::Kind::IntList || dim->to_int_list().empty()) return std::nullopt;
  ReducedDims out;
  out.sizes = std::move(*sizes);
  for (int64_t d : dim->to_int_list()) {
    const auto w = wrap_dim(d, out.sizes.size());
    if (!w) return std::nullopt;
    out.dims.push_back(*w);
  }
  std::sort(out.dims.begin(), out.dims.end());
  return out;
}

}  // namespace kiln::passes
