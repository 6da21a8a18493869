// Gradient accumulation per node input.
#include "eager/autograd/InputBuffer.h"

#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"

namespace kiln::autograd {

void InputBuffer::add(size_t pos, Tensor grad) {
  KILN_INTERNAL_ASSERT(pos < buffer_.size());
  if (!grad.defined()) return;
  Tensor& slot = buffer_[pos];
  slot = slot.defined() ? autograd::add(slot, grad) : std::move(grad);
}

}  // namespace kiln::autograd
