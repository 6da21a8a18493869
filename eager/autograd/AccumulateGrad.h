// AccumulateGrad: the node at a leaf that adds incoming gradients into .grad.
#pragma once

#include "eager/autograd/Node.h"

namespace kiln::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {}
  variable_list apply(variable_list&& grads) override;
  /// As PyTorch names it (torch::autograd::AccumulateGrad).
  [[nodiscard]] std::string name() const override { return "kiln::autograd::AccumulateGrad"; }
  [[nodiscard]] const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

/// How many references to a tensor a recorder on this thread holds beyond the
/// autograd engine's (graph capture keeps every tensor it records: capture/
/// CaptureSession.h), so AccumulateGrad still steals a gradient nobody else
/// holds while a training step is captured. Set once by capture; null: none.
using HeldReferencesHook = long (*)(const Tensor& t);
void set_held_references_hook(HeldReferencesHook hook);

/// The leaf's AccumulateGrad (one per leaf, shared by every graph using it).
[[nodiscard]] std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

}  // namespace kiln::autograd
