// The attention backward writing its gradients into their cat (Note [Attention gradients into their cat]).
#include "runtime/AttentionGradsIntoCat.h"

#include <algorithm>

#include "eager/core/ProfilerEvents.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/AttentionInto.h"
#include "passes/arguments.h"
#include "passes/type_facts.h"

namespace kiln::runtime {

namespace {

constexpr const char* kBackward = "kiln::_scaled_dot_product_flash_attention_for_cpu_backward";

/// The one node reading v, when v has exactly one use and is not a graph output.
const ir::Node* only_reader(const ir::Graph& g, const ir::Value* v) {
  if (v->uses().size() != 1) return nullptr;
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return nullptr;
  return v->uses().front().user;
}

/// The literal int argument `name` of n, wrapped for `rank` dims.
std::optional<int64_t> dim_argument(const ir::Node& n, std::string_view name, int64_t rank) {
  const ir::Attribute* a = passes::literal_argument(n, name);
  if (a == nullptr || a->kind() != ir::Attribute::Kind::Int) return std::nullopt;
  const int64_t d = a->to_int() < 0 ? a->to_int() + rank : a->to_int();
  if (d < 0 || d >= rank) return std::nullopt;
  return d;
}

bool is_op(const ir::Node* n, std::string_view kind) {
  return n != nullptr && n->kind() == ir::NodeKind::Op && n->kind_name() == kind;
}

}  // namespace

std::optional<AttentionGradsIntoCat> match_attention_grads_into_cat(const ir::Graph& g, const ir::Node& n) {
  if (!is_op(&n, kBackward) || n.outputs().size() != 3) return std::nullopt;
  AttentionGradsIntoCat m;
  m.backward = &n;
  const ir::Attribute* dropout = passes::literal_argument(n, "dropout_p");
  const ir::Attribute* causal = passes::literal_argument(n, "is_causal");
  const ir::Attribute* scale = passes::literal_argument(n, "scale");
  if (dropout == nullptr || dropout->kind() != ir::Attribute::Kind::Float || dropout->to_float() != 0.0) {
    return std::nullopt;
  }
  if (causal == nullptr || causal->kind() != ir::Attribute::Kind::Bool) return std::nullopt;
  m.is_causal = causal->to_bool();
  if (scale == nullptr || !(scale->is_none() || scale->kind() == ir::Attribute::Kind::Float)) return std::nullopt;
  if (!scale->is_none()) m.scale = scale->to_float();
  if (const ir::Value* mask = passes::value_argument(n, "attn_mask")) {
    if (!mask->type().is_tensor()) return std::nullopt;  // an Optional-typed value: unknown until run
    m.attn_mask = mask;
  } else {
    const ir::Attribute* none = passes::literal_argument(n, "attn_mask");
    if (none == nullptr || !none->is_none()) return std::nullopt;
  }
  const ir::Value* query = passes::value_argument(n, "query");
  if (query == nullptr || !query->type().is_tensor()) return std::nullopt;
  const auto dtype = passes::dtype_of(query);
  if (dtype != DType::Float32 && dtype != DType::Float64) return std::nullopt;
  const auto grad_sizes = passes::concrete_sizes(n.output(0));
  if (!grad_sizes || grad_sizes->size() != 4) return std::nullopt;

  const ir::Node* list = nullptr;
  std::vector<const ir::Node*> middle;  // the transposes and unsqueezes
  for (size_t i = 0; i < 3; ++i) {
    const ir::Value* grad = n.output(i);
    if (passes::dtype_of(grad) != dtype || passes::concrete_sizes(grad) != grad_sizes) return std::nullopt;
    const ir::Node* t = only_reader(g, grad);
    if (!is_op(t, "kiln::transpose.int")) return std::nullopt;
    const auto d0 = dim_argument(*t, "dim0", 4), d1 = dim_argument(*t, "dim1", 4);
    if (!d0 || !d1 || std::min(*d0, *d1) != 1 || std::max(*d0, *d1) != 2) return std::nullopt;
    const ir::Node* u = only_reader(g, t->output());
    if (!is_op(u, "kiln::unsqueeze") || dim_argument(*u, "dim", 5) != 2) return std::nullopt;
    const ir::Node* l = only_reader(g, u->output());
    if (l == nullptr || l->kind() != ir::NodeKind::ListConstruct || (list != nullptr && l != list)) return std::nullopt;
    list = l;
    const auto at = std::find(l->inputs().begin(), l->inputs().end(), u->output());
    m.piece_of_grad[i] = at - l->inputs().begin();
    middle.push_back(t);
    middle.push_back(u);
  }
  if (list->inputs().size() != 3) return std::nullopt;
  const ir::Node* cat = only_reader(g, list->output());
  if (!is_op(cat, "kiln::cat") || dim_argument(*cat, "dim", 5) != 2 || !passes::is_contiguous(cat->output()) ||
      passes::dtype_of(cat->output()) != dtype) {
    return std::nullopt;
  }
  m.cat = cat;
  m.nodes.push_back(&n);
  std::sort(middle.begin(), middle.end(), [&](const ir::Node* a, const ir::Node* b) { return a->is_before(b); });
  m.nodes.insert(m.nodes.end(), middle.begin(), middle.end());
  m.nodes.push_back(list);
  m.nodes.push_back(cat);
  return m;
}

std::optional<Tensor> run_attention_grads_into_cat(const AttentionGradsIntoCat& m,
                                                   const std::function<const IValue&(const ir::Value*)>& get) {
  const auto tensor = [&](std::string_view name) -> const Tensor* {
    const ir::Value* v = passes::value_argument(*m.backward, name);
    if (v == nullptr) return nullptr;
    const IValue& x = get(v);
    return x.is_tensor() ? &x.to_tensor() : nullptr;
  };
  const Tensor* grad_out = tensor("grad_out");
  const Tensor* query = tensor("query");
  const Tensor* key = tensor("key");
  const Tensor* value = tensor("value");
  const Tensor* out = tensor("out");
  const Tensor* logsumexp = tensor("logsumexp");
  if (!grad_out || !query || !key || !value || !out || !logsumexp) return std::nullopt;
  std::optional<Tensor> mask;
  if (m.attn_mask != nullptr) {
    const IValue& x = get(m.attn_mask);
    if (x.is_tensor()) mask = x.to_tensor();
    else if (!x.is_none()) return std::nullopt;
  }
  const auto same = [](IntArrayRef a, IntArrayRef b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); };
  if (query->dim() != 4 || !same(key->sizes(), query->sizes()) || !same(value->sizes(), query->sizes()) ||
      query->device().type() != DeviceType::CPU) {
    return std::nullopt;
  }
  profiler::RecordScope range("kiln::_scaled_dot_product_flash_attention_for_cpu_backward (into cat)", "operator");
  const int64_t B = query->size(0), H = query->size(1), L = query->size(2), D = query->size(3);
  const std::vector<int64_t> sizes = {B, L, 3, H, D};
  Tensor stacked = kiln::zeros(IntArrayRef(sizes), query->dtype());
  // Piece p of the cat, [B, L, H, D] at offset p H D, seen as [B, H, L, D].
  std::array<Tensor, 3> grads;
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<int64_t> view_sizes = {B, H, L, D};
    const std::vector<int64_t> view_strides = {L * 3 * H * D, D, 3 * H * D, 1};
    grads[i] = native::as_strided_impl(stacked, IntArrayRef(view_sizes), IntArrayRef(view_strides),
                                       stacked.storage_offset() + m.piece_of_grad[i] * H * D);
  }
  if (!native::flash_attention_backward_into(*grad_out, *query, *key, *value, *out, *logsumexp, m.is_causal, mask,
                                             m.scale, grads[0], grads[1], grads[2])) {
    return std::nullopt;
  }
  return stacked;
}

}  // namespace kiln::runtime
