// Fusion group -> kernel IR.
#include "codegen/FusionKernel.h"

#include <unordered_map>

#include "codegen/PointwiseMath.h"

namespace kiln::codegen {

namespace {

DType dtype_of_value(const ir::Value* v) { return *v->type().tensor_type().dtype; }

std::vector<int64_t> sizes_of(const ir::Value* v) {
  std::vector<int64_t> s;
  for (const auto& d : *v->type().tensor_type().sizes) s.push_back(d.value());
  return s;
}

std::vector<int64_t> strides_of(const ir::Value* v) {
  std::vector<int64_t> s;
  for (const auto& d : *v->type().tensor_type().strides) s.push_back(d.value());
  return s;
}

/// v has exactly the layout (sizes, and strides of dims larger than 1).
bool same_layout(const ir::Value* v, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (sizes_of(v) != sizes) return false;
  const std::vector<int64_t> vs = strides_of(v);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && vs[d] != strides[d]) return false;
  }
  return true;
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

/// v's recorded stride along the kernel's innermost iteration dim, as run_kernel passes it (0 where v
/// broadcasts there), when it is 0 or 1; else -1 (Note [Strided kernels' inner loops]).
int8_t inner_stride_hint(const ir::Value* v, const FusionKernel& fk) {
  if (fk.order.empty()) return -1;
  const size_t r = fk.sizes.size(), dim = fk.order.back();
  const std::vector<int64_t> vs = sizes_of(v), vst = strides_of(v);
  if (vs.size() > r || vst.size() != vs.size()) return -1;
  if (dim + vs.size() < r) return 0;  // a leading broadcast dim
  const size_t d = dim + vs.size() - r;
  const int64_t st = vs[d] == 1 ? 0 : vst[d];
  return st == 0 || st == 1 ? static_cast<int8_t>(st) : int8_t{-1};
}

}  // namespace

bool has_kernel_math(const ir::Node& n) {
  Kernel k;
  for (const ir::Value* v : n.inputs()) {
    if (!v->type().is_tensor() || !v->type().tensor_type().dtype) return false;
    k.input_dtypes.push_back(dtype_of_value(v));
  }
  KernelBuilder b(k);
  std::vector<int32_t> inputs;
  for (size_t i = 0; i < k.input_dtypes.size(); ++i) inputs.push_back(b.load(static_cast<int32_t>(i)));
  return build_pointwise_math(b, n, inputs).has_value();
}

std::optional<FusionKernel> lower_fusion_group(const passes::FusionGroup& group) {
  FusionKernel fk;
  Kernel& k = fk.kernel;
  fk.sizes = sizes_of(group.nodes.back()->output());
  fk.strides = strides_of(group.nodes.back()->output());
  for (size_t d = 0; d < fk.sizes.size(); ++d) fk.order.push_back(d);
  std::stable_sort(fk.order.begin(), fk.order.end(), [&](size_t a, size_t b) {
    const int64_t sa = fk.sizes[a] == 1 ? 0 : fk.strides[a], sb = fk.sizes[b] == 1 ? 0 : fk.strides[b];
    return sa > sb;
  });
  for (size_t d : fk.order) fk.shape.push_back(fk.sizes[d]);
  bool contiguous = true;
  for (const ir::Value* v : group.inputs) {
    k.input_dtypes.push_back(dtype_of_value(v));
    const bool scalar = numel_of(sizes_of(v)) == 1;
    k.input_scalar.push_back(scalar);
    if (!scalar && !same_layout(v, fk.sizes, fk.strides)) contiguous = false;
  }
  k.contiguous = contiguous;
  k.rank = contiguous ? 1 : std::max<int>(1, static_cast<int>(fk.shape.size()));
  if (!contiguous) {
    k.input_scalar.assign(k.input_dtypes.size(), false);
    for (const ir::Value* v : group.inputs) k.inner_stride_hint.push_back(inner_stride_hint(v, fk));
  }
  KernelBuilder b(k);
  std::unordered_map<const ir::Value*, int32_t> expr_of;
  for (size_t i = 0; i < group.inputs.size(); ++i) expr_of[group.inputs[i]] = b.load(static_cast<int32_t>(i));
  for (const ir::Node* n : group.nodes) {
    std::vector<int32_t> inputs;
    for (const ir::Value* v : n->inputs()) inputs.push_back(expr_of.at(v));
    const std::optional<int32_t> e = build_pointwise_math(b, *n, inputs);
    if (!e) return std::nullopt;
    expr_of[n->output()] = *e;
  }
  for (const ir::Value* v : group.outputs) {
    k.output_dtypes.push_back(dtype_of_value(v));
    k.outputs.push_back(expr_of.at(v));
  }
  return fk;
}

}  // namespace kiln::codegen
