// Saving and unpacking tensors for backward formulas.
#include "eager/autograd/SavedVariable.h"

#include <sstream>

#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"

namespace kiln::autograd {

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  is_output_ = is_output;
  saved_version_ = t.version();
  const std::shared_ptr<Node>& fn = grad_fn(t);  // a stale view's, regenerated first
  const AutogradMeta* m = autograd_meta(t);
  is_leaf_ = !is_output && (m == nullptr || m->grad_fn == nullptr);
  if (is_leaf_) {
    // A leaf holds no reference to any node: no cycle. Unless it is a view,
    // whose base may later get a history holding this node (a view of a
    // plain tensor written into the tensor itself): then, when it needs no
    // gradient of its own, an alias without the base is enough.
    data_ = t.impl()->view_base() != nullptr && !t.requires_grad() ? detached_alias(t) : t;
    return;
  }
  data_ = detached_alias(t);
  output_nr_ = m ? m->output_nr : 0;
  if (!is_output) grad_fn_ = fn;
}

void SavedVariable::reset() {
  if (!was_defined_) return;
  data_ = Tensor();
  grad_fn_.reset();
  released_ = true;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!was_defined_) return Tensor();
  KILN_CHECK(!released_, "Trying to backward through the graph a second time (or directly access saved tensors after "
             "they have already been freed). Saved intermediate values of the graph are freed when you call "
             ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a "
             "second time or if you need to access saved tensors after calling backward.");
  const uint32_t current = data_.version();
  if (current != saved_version_) {
    std::ostringstream msg;
    msg << "one of the variables needed for gradient computation has been modified by an inplace operation: [kiln."
        << legacy_tensor_name(data_.dtype()) << " " << data_.sizes() << "]";
    const std::shared_ptr<Node>& fn = is_output_ ? saved_for : grad_fn_;
    if (fn) msg << ", which is output " << output_nr_ << " of " << fn->name() << ",";
    msg << " is at version " << current << "; expected version " << saved_version_
        << " instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
           "with kiln.autograd.set_detect_anomaly(True).";
    KILN_FAIL(Runtime, msg.str());
  }
  if (is_leaf_) return data_;
  const std::shared_ptr<Node>& fn = is_output_ ? saved_for : grad_fn_;
  if (!fn) return data_;
  // Rebuild the history so formulas stay differentiable (create_graph=True).
  Tensor out = detached_alias(data_);
  AutogradMeta& m = materialize_autograd_meta(out);
  m.grad_fn = fn;
  m.output_nr = output_nr_;
  out.impl()->set_key_set(out.key_set().add(DispatchKey::Autograd));
  return out;
}

}  // namespace kiln::autograd
