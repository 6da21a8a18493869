// Views under autograd: creation marks, lazy regeneration, in-place checks
// and rebasing. See Note [Views know their base] and Note [In-place through
// a view: CopySlices] (ViewAutograd.h).
#include "eager/autograd/ViewAutograd.h"

#include <algorithm>
#include <string>

#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/CopySlices.h"
#include "eager/autograd/GradMode.h"
#include "eager/core/Error.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd {

namespace {

Tensor base_of(const Tensor& view) { return Tensor(intrusive_ptr<TensorImpl>(view.impl()->view_base())); }

/// "UnbindBackward0" -> "Unbind", as PyTorch names a node in its view errors.
std::string short_name(const std::string& node_name) {
  const size_t at = node_name.rfind("Backward");
  return at == std::string::npos ? node_name : node_name.substr(0, at);
}

}  // namespace

bool may_overlap(IntArrayRef sizes, IntArrayRef strides) {
  DimVector order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return false;
    if (sizes[d] != 1) order.push_back(static_cast<int64_t>(d));
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t reach = 0;  // largest offset the dims so far address
  for (int64_t d : order) {
    if (strides[d] <= reach) return true;
    reach += (sizes[d] - 1) * strides[d];
  }
  return false;
}

void note_view(const Tensor& self, const Tensor& view, bool has_history, bool multi_output) {
  TensorImpl* impl = view.impl();
  if (impl->view_base() == nullptr) return;  // detach, dtype views: not differentiable views
  const TensorImpl* parent = self.impl();
  ViewCreation creation = multi_output ? ViewCreation::MultiOutput : ViewCreation::Default;
  if (parent->view_base() != nullptr && parent->view_creation() != ViewCreation::Default) {
    creation = parent->view_creation();
  }
  impl->set_view_creation(creation);
  if (!has_history) return;
  AutogradMeta& m = materialize_autograd_meta(view);
  m.view_history = true;
  m.attr_version = view.version();
}

void refresh_view_history(const Tensor& t, AutogradMeta& m) {
  m.attr_version = t.version();
  const Tensor base = base_of(t);
  if (!requires_grad(base)) return;  // the base lost its history (detach_): keep the view's
  // as_strided over the base records AsStridedBackward0 with the base's current
  // edge; the view takes that node as its own (its input 0 has the view's shape).
  AutoGradMode grad_mode(true);
  const Tensor fresh = kiln::as_strided(base, t.sizes(), t.strides(), t.storage_offset());
  const AutogradMeta* fm = autograd_meta(fresh);
  KILN_INTERNAL_ASSERT(fm != nullptr && fm->grad_fn != nullptr);
  std::shared_ptr<Node> old_fn = std::move(m.grad_fn);
  m.grad_fn = fm->grad_fn;
  m.output_nr = fm->output_nr;
  m.view_history = true;
  move_retain_grad_hook(m, old_fn.get());
  t.impl()->set_key_set(t.key_set().add(DispatchKey::Autograd));
}

void view_rebase_error(const Tensor& view, bool indirect) {
  const AutogradMeta* m = autograd_meta(view);
  const Node* fn = m != nullptr ? m->grad_fn.get() : nullptr;
  const ViewCreation creation = view.impl()->view_creation();
  const std::string modified = indirect ? "its base or another view of its base has been" : "is being";
  const std::string output = fn ? "Output " + std::to_string(m->output_nr) + " of " + short_name(fn->name()) : "";
  std::string msg;
  if (creation == ViewCreation::NoGradMode || fn == nullptr) {
    msg = (fn ? output + " is a view of a view which was created in" : std::string("A view was created in")) +
          " no_grad mode and " + modified + " modified inplace with grad mode enabled.";
  } else {
    msg = output + " is a view and " + modified + " modified inplace.";
  }
  if (creation == ViewCreation::MultiOutput) {
    msg += " This view is the output of a function that returns multiple views. Such functions do not allow the "
           "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
  } else {
    msg += " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
           "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
           "inplace to be tracked) or both outside (if you want the inplace to be tracked).";
  }
  KILN_FAIL(Runtime, msg);
}

void check_inplace(const Tensor& self, bool needs_grad) {
  AutogradMeta* m = autograd_meta(self);
  const TensorImpl* impl = self.impl();
  // A view of a tensor that requires grad requires grad itself (even one made
  // in no_grad mode), so `needs_grad` covers it.
  if (impl->view_base() != nullptr && (needs_grad || impl->view_base()->requires_grad())) {
    if (impl->view_creation() != ViewCreation::Default) view_rebase_error(self, /*indirect=*/false);
    const Tensor base = base_of(self);
    KILN_CHECK(!(is_leaf(base) && base.requires_grad()),
               "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    // PyTorch's kernels refuse a broadcast (0-stride) output; other overlaps
    // pass, the last write winning in forward and in CopySlices alike.
    bool broadcast = false;
    for (int64_t d = 0; d < self.dim(); ++d) broadcast = broadcast || (self.stride(d) == 0 && self.size(d) > 1);
    KILN_CHECK(!broadcast,
               "unsupported operation: more than one element of the written-to tensor refers to a single memory "
               "location. Please clone() the tensor before performing the operation.");
  }
  if (m == nullptr) return;
  KILN_CHECK(!(m->grad_fn == nullptr && m->leaf_requires_grad),
             "a leaf Variable that requires grad is being used in an in-place operation.");
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn) {
  if (self.impl()->view_base() == nullptr) {
    set_history(self, fn);
    return;
  }
  const Tensor base = base_of(self);
  std::vector<Edge> edges = fn->next_edges();
  KILN_INTERNAL_ASSERT(!edges.empty());
  Edge base_edge = gradient_edge(base);
  if (!edges[0].is_valid() && base_edge.is_valid()) {
    // The view had no history of its own (it was made before its base had
    // any): give fn's self the edge PyTorch's regenerated view would have, so
    // fn computes its self's gradient, which CopySlices needs.
    AutoGradMode grad_mode(true);
    edges[0] = gradient_edge(kiln::as_strided(base, self.sizes(), self.strides(), self.storage_offset()));
    fn->set_next_edges(edges);
  }
  (void)fn->add_input_metadata(self);
  auto copy_slices = std::make_shared<CopySlices>(base, self, fn);
  edges[0] = std::move(base_edge);
  copy_slices->set_next_edges(std::move(edges));
  set_history(base, copy_slices);
  refresh_view_history(self, materialize_autograd_meta(self));
}

}  // namespace kiln::autograd
