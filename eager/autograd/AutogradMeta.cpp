// Autograd state on tensors: meta access, gradient edges, history.
#include "eager/autograd/AutogradMeta.h"

#include "eager/autograd/AccumulateGrad.h"
#include "eager/autograd/Variable.h"
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
/// version since it was set; a view with no history of its own follows its
/// base's once a write moved the version past the view's creation (Note
/// [Views know their base], ViewAutograd.h). Returns the (maybe new) meta.
AutogradMeta* refresh_if_stale(const Tensor& t, AutogradMeta* m) {
  TensorImpl* impl = t.impl();
  if (impl->view_base() == nullptr) return m;
  if (m != nullptr && m->view_history) {
    if (m->attr_version == t.version()) return m;
  } else if (!impl->view_base()->requires_grad() || impl->view_version() == t.version()) {
    return m;
  }
  if (impl->view_creation() != ViewCreation::Default && impl->view_base()->requires_grad()) {
    view_rebase_error(t, /*indirect=*/true);
  }
  AutogradMeta& mm = m != nullptr ? *m : materialize_autograd_meta(t);
  refresh_view_history(t, mm);
  return &mm;
}

}  // namespace

const std::shared_ptr<Node>& grad_fn(const Tensor& t) {
  static const std::shared_ptr<Node> kNone;
  if (!t.defined()) return kNone;
  AutogradMeta* m = refresh_if_stale(t, autograd_meta(t));
  if (m == nullptr) return kNone;
  return m->grad_fn;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return Edge{};
  AutogradMeta* m = refresh_if_stale(t, autograd_meta(t));
  if (m == nullptr) return Edge{};
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
  std::shared_ptr<Node> old_fn = std::move(m.grad_fn);
  m.grad_fn = fn;
  m.output_nr = fn->add_input_metadata(output);
  output.impl()->set_key_set(output.key_set().add(DispatchKey::Autograd));
  if (m.retains_grad) move_retain_grad_hook(m, old_fn.get());
}

namespace {

size_t add_retain_grad_hook(AutogradMeta& m) {
  // The hook writes into a slot the tensor's meta shares, so the graph never
  // holds the tensor itself (no reference cycle through grad_fn).
  std::shared_ptr<Tensor> slot = m.retained_grad;
  return m.grad_fn->add_tensor_pre_hook(m.output_nr, [slot](const Tensor& grad) {
    *slot = slot->defined() ? add(*slot, grad) : detached_copy(grad);
    return Tensor();
  }, /*run_last=*/true);
}

}  // namespace

void retain_grad(const Tensor& t) {
  KILN_CHECK(t.requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  (void)grad_fn(t);  // a stale view's history, regenerated first
  AutogradMeta& m = materialize_autograd_meta(t);
  if (m.grad_fn == nullptr || m.retains_grad) return;  // leaves keep their grad anyway
  m.retains_grad = true;
  m.retained_grad = std::make_shared<Tensor>();
  m.retain_hook_id = add_retain_grad_hook(m);
}

void move_retain_grad_hook(AutogradMeta& m, Node* old_fn) {
  if (!m.retains_grad || old_fn == m.grad_fn.get()) return;
  if (old_fn != nullptr) old_fn->remove_tensor_pre_hook(m.retain_hook_id);
  if (m.grad_fn != nullptr) m.retain_hook_id = add_retain_grad_hook(m);
}

void set_history_if_differentiable(const Tensor& output, const std::shared_ptr<Node>& fn) {
  if (!output.defined()) return;
  if (is_differentiable_dtype(output.dtype())) {
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
