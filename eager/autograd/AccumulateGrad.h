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

/// The leaf's AccumulateGrad (one per leaf, shared by every graph using it).
[[nodiscard]] std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

}  // namespace kiln::autograd
