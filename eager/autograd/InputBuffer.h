// InputBuffer: sums the gradients that reach one node by several paths
// before the node runs.
#pragma once

#include "eager/autograd/Node.h"

namespace kiln::autograd {

class InputBuffer {
 public:
  explicit InputBuffer(size_t size) : buffer_(size) {}
  /// Adds `grad` into slot `pos` (out of place, so gradients seen elsewhere are not changed).
  void add(size_t pos, Tensor grad);
  [[nodiscard]] variable_list release() { return std::move(buffer_); }
  [[nodiscard]] size_t size() const { return buffer_.size(); }

 private:
  variable_list buffer_;
};

}  // namespace kiln::autograd
