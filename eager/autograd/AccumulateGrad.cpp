// Accumulating gradients into leaves, by PyTorch's rules.
#include "eager/autograd/AccumulateGrad.h"

#include <atomic>

#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"

namespace kiln::autograd {

namespace {
std::atomic<HeldReferencesHook> held_references_hook{nullptr};

long held_references(const Tensor& t) {
  HeldReferencesHook hook = held_references_hook.load(std::memory_order_relaxed);
  return hook == nullptr ? 0 : hook(t);
}
}  // namespace

void set_held_references_hook(HeldReferencesHook hook) { held_references_hook.store(hook); }

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& m = materialize_autograd_meta(leaf);
  std::lock_guard<std::mutex> lock(m.mutex);
  if (auto existing = m.grad_accumulator.lock()) return existing;
  auto acc = std::make_shared<AccumulateGrad>(leaf);
  acc->add_input_metadata(leaf);
  m.grad_accumulator = acc;
  return acc;
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  KILN_INTERNAL_ASSERT(grads.size() == 1);
  Tensor grad = std::move(grads[0]);
  if (!grad.defined()) return {};
  AutogradMeta& m = materialize_autograd_meta(variable_);
  for (const auto& [id, hook] : m.leaf_hooks) {
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  const bool create_graph = GradMode::is_enabled();
  if (!m.grad.defined()) {
    if (create_graph) {
      m.grad = grad;
    } else if (grad.use_count() == 1 + held_references(grad) && grad.is_contiguous() && autograd_meta(grad) == nullptr) {
      m.grad = std::move(grad);  // nobody else holds it: steal
    } else {
      m.grad = detached_copy(grad);  // the caller may still hold (and change) it
    }
  } else if (create_graph) {
    m.grad = add(m.grad, grad);  // out of place, keeping the graph
  } else {
    (void)add_(m.grad, grad);
  }
  for (const auto& [id, hook] : m.post_accumulate_grad_hooks) hook(variable_);
  return {};
}

}  // namespace kiln::autograd
