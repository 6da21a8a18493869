// SavedVariable: a tensor a backward formula needs, saved at forward time
// with the version it had, so a later in-place change is caught, and without
// a reference cycle when the tensor is the node's own output.
#pragma once

#include <memory>

#include "eager/autograd/Node.h"

namespace kiln::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  /// `is_output`: `t` is an output of the node saving it (kept without a
  /// strong reference to that node).
  SavedVariable(const Tensor& t, bool is_output);

  /// The saved tensor, with its autograd history (so create_graph works).
  /// RuntimeError with PyTorch's text when it was modified in place since it
  /// was saved, or freed by a previous backward. `saved_for` is the node that
  /// saved it.
  [[nodiscard]] Tensor unpack(const std::shared_ptr<Node>& saved_for) const;
  /// Frees the saved tensor (after a backward without retain_graph).
  void reset();
  [[nodiscard]] bool defined() const { return was_defined_; }

 private:
  Tensor data_;          // leaves: the tensor itself; others: a detached alias
  bool was_defined_ = false;
  bool is_output_ = false;
  bool is_leaf_ = false;
  bool released_ = false;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  std::shared_ptr<Node> grad_fn_;  // non-leaf inputs only
};

}  // namespace kiln::autograd
