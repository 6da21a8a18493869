// CopySlices: the node a tensor gets when an in-place op writes into one of
// its views. See Note [In-place through a view: CopySlices] (ViewAutograd.h).
#pragma once

#include <memory>

#include "eager/autograd/Node.h"

namespace kiln::autograd {

class CopySlices final : public Node {
 public:
  /// `fn` recorded the in-place op on `view`, a view of `base`. The caller
  /// sets the edges: the base's previous history first, then fn's others.
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);

  /// grads[0] has the base's shape; out[0] is it with the view's region
  /// replaced by fn's gradient for its self, out[i] is fn's gradient i.
  variable_list apply(variable_list&& grads) override;
  [[nodiscard]] std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }

  [[nodiscard]] const std::shared_ptr<Node>& fn() const { return fn_; }

 private:
  DimVector base_sizes_, base_strides_;
  DimVector view_sizes_, view_strides_;
  int64_t offset_ = 0;  // the view's storage offset minus the base's
  std::shared_ptr<Node> fn_;
};

}  // namespace kiln::autograd
