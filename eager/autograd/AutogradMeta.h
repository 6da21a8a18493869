// AutogradMeta: a tensor's autograd state (its grad, the node that made it,
// hooks), living in TensorImpl's slot (Note [Autograd meta is a slot]).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "eager/autograd/Node.h"

namespace kiln::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  Tensor grad;
  std::shared_ptr<Node> grad_fn;           // null for leaves
  std::weak_ptr<Node> grad_accumulator;    // leaves: their AccumulateGrad, made on demand
  uint32_t output_nr = 0;                  // which output of grad_fn this is
  bool leaf_requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<Tensor> retained_grad;  // non-leaf .grad after retain_grad()
  size_t retain_hook_id = 0;              // its hook on grad_fn, moved when grad_fn changes
  /// A view whose grad_fn describes it as a function of its base; regenerated
  /// when the version moves past attr_version (Note [Views know their base],
  /// ViewAutograd.h).
  bool view_history = false;
  uint32_t attr_version = 0;
  /// Hooks of a leaf, run (in order) on its gradient before accumulation.
  std::vector<std::pair<size_t, std::function<Tensor(const Tensor&)>>> leaf_hooks;
  /// Hooks of a leaf, run (in order) with the leaf after its gradient was
  /// accumulated into .grad (torch's register_post_accumulate_grad_hook).
  std::vector<std::pair<size_t, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;
  std::mutex mutex;  // guards grad_accumulator creation

  [[nodiscard]] bool requires_grad() const override { return leaf_requires_grad || grad_fn != nullptr; }
  void set_requires_grad(bool value) override { leaf_requires_grad = value; }
};

/// The tensor's AutogradMeta, or nullptr when it never had one.
[[nodiscard]] AutogradMeta* autograd_meta(const Tensor& t);
/// The tensor's AutogradMeta, created if missing.
[[nodiscard]] AutogradMeta& materialize_autograd_meta(const Tensor& t);

[[nodiscard]] inline bool is_leaf(const Tensor& t) {
  const AutogradMeta* m = autograd_meta(t);
  return m == nullptr || m->grad_fn == nullptr;
}
/// The tensor's grad_fn (a view's regenerated first when a write made it stale).
[[nodiscard]] const std::shared_ptr<Node>& grad_fn(const Tensor& t);

/// The edge a gradient for `t` flows into: its grad_fn's input, or its
/// AccumulateGrad for a leaf that requires grad; invalid otherwise.
[[nodiscard]] Edge gradient_edge(const Tensor& t);
/// Edges for a list of inputs (invalid where an input needs no gradient).
[[nodiscard]] std::vector<Edge> collect_next_edges(std::initializer_list<const Tensor*> inputs);

/// Appends the edges of one input (a Tensor, an optional one, or a Tensor[]:
/// one edge per element) to a node's next edges.
void append_next_edges(std::vector<Edge>& edges, const Tensor& t);
void append_next_edges(std::vector<Edge>& edges, const std::optional<Tensor>& t);
void append_next_edges(std::vector<Edge>& edges, TensorList ts);

/// Makes `output` the `grad_fn`'s next output: records its metadata there,
/// sets grad_fn/output_nr, and adds the Autograd dispatch key.
void set_history(const Tensor& output, const std::shared_ptr<Node>& grad_fn);
/// set_history for a floating-point output; any other output only takes its
/// input slot on `grad_fn` (so slot i stays output i) and gets no history.
/// See Note [Several outputs] (tools/opgen/autograd.py).
void set_history_if_differentiable(const Tensor& output, const std::shared_ptr<Node>& grad_fn);

[[nodiscard]] inline bool requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }
[[nodiscard]] inline bool requires_grad(const std::optional<Tensor>& t) { return t.has_value() && requires_grad(*t); }
[[nodiscard]] inline bool requires_grad(TensorList ts) {
  for (const Tensor& t : ts) {
    if (requires_grad(t)) return true;
  }
  return false;
}

/// Tensor.retain_grad(): a non-leaf keeps its gradient in .grad; the hook
/// follows the tensor when an in-place op or a view's regeneration gives it a
/// new grad_fn (PyTorch's update_tensor_hooks_on_new_gradfn).
void retain_grad(const Tensor& t);
/// Moves `m`'s retain_grad hook from `old_fn` to its current grad_fn.
void move_retain_grad_hook(AutogradMeta& m, Node* old_fn);

/// Installs this module's AutogradMeta into the core's factory. Called once at load.
void install_autograd_meta_factory();

}  // namespace kiln::autograd
