// Autograd state on tensors: meta access, gradient edges, history.
#include "eager/autograd/AutogradMeta.h"

#include "eager/autograd/AccumulateGrad.h"
#include "eager/autograd/ViewAutograd.h"
#include "eager/core/Error.h"

namespace kiln::autograd {

AutogradMeta* autograd_meta(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

AutogradMeta& materialize_autograd_meta(const Tensor& t) {
  KILN_INTERNAL_ASSERT(t.defined());
  if (t.impl()->autograd_meta() == nullptr) t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *autograd_meta(t);
}

namespace {

/// A view's history is stale when a write through any alias moved the shared
/// version since it was set (Note [Views know their base], ViewAutograd.h).
void refresh_if_stale(const Tensor& t, AutogradMeta& m) {
  if (m.view_history && m.attr_version != t.version()) refresh_view_history(t, m);
}

}  // namespace

const std::shared_ptr<Node>& grad_fn(const Tensor& t) {
  static const std::shared_ptr<Node> kNone;
  AutogradMeta* m = autograd_meta(t);
  if (m == nullptr) return kNone;
  refresh_if_stale(t, *m);
  return m->grad_fn;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = autograd_meta(t);
  if (m == nullptr) return Edge{};
  refresh_if_stale(t, *m);
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  if (m->leaf_requires_grad) return Edge{grad_accumulator(t), 0};
  return Edge{};
}

std::vector<Edge> collect_next_edges(std::initializer_list<const Tensor*> inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(t && t->defined() ? gradient_edge(*t) : Edge{});
  return edges;
}

void append_next_edges(std::vector<Edge>& edges, const Tensor& t) {
  edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
}

void append_next_edges(std::vector<Edge>& edges, const std::optional<Tensor>& t) {
  edges.push_back(t && t->defined() ? gradient_edge(*t) : Edge{});
}

void append_next_edges(std::vector<Edge>& edges, TensorList ts) {
  for (const Tensor& t : ts) append_next_edges(edges, t);
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& fn) {
  if (!output.defined()) return;
  AutogradMeta& m = materialize_autograd_meta(output);
  m.grad_fn = fn;
  m.output_nr = fn->add_input_metadata(output);
  output.impl()->set_key_set(output.key_set().add(DispatchKey::Autograd));
}

void set_history_if_differentiable(const Tensor& output, const std::shared_ptr<Node>& fn) {
  if (!output.defined()) return;
  if (is_floating_point(output.dtype())) {
    set_history(output, fn);
  } else {
    (void)fn->add_input_metadata(output);
  }
}

void install_autograd_meta_factory() {
  set_autograd_meta_factory([]() -> std::unique_ptr<AutogradMetaInterface> { return std::make_unique<AutogradMeta>(); });
}

namespace {
const bool g_installed = [] {
  install_autograd_meta_factory();
  return true;
}();
}  // namespace

}  // namespace kiln::autograd
