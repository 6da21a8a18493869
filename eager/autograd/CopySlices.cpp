// CopySlices' backward: fn's backward on the view's region of the base's
// gradient. Every step goes through the dispatcher, so a create_graph
// backward records it (and the write into the region is itself an in-place
// op on a view, rebased onto `result` the same way).
#include "eager/autograd/CopySlices.h"

#include "kiln/generated/Functions.h"

namespace kiln::autograd {

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
    : base_sizes_(base.sizes()),
      base_strides_(base.strides()),
      view_sizes_(view.sizes()),
      view_strides_(view.strides()),
      offset_(view.storage_offset() - base.storage_offset()),
      fn_(std::move(fn)) {}

variable_list CopySlices::apply(variable_list&& grads) {
  variable_list out(num_outputs());
  const Tensor& grad = grads[0];
  if (!grad.defined()) return out;
  // The base's gradient laid out as the base is, so the view's strides and
  // offset (relative to the base's storage) address the region in it.
  const InputMetadata& meta = input_metadata(0);
  // The dispatched op, so a capture of the backward records the allocation.
  Tensor result = kiln::empty_strided(base_sizes_, base_strides_, std::optional<DType>(meta.dtype),
                                      std::optional<Device>(meta.device));
  (void)result.copy_(grad);
  const Tensor region = kiln::as_strided(result, view_sizes_, view_strides_, result.storage_offset() + offset_);
  variable_list fn_out = (*fn_)(variable_list{kiln::clone(region)});
  for (size_t i = 1; i < out.size() && i < fn_out.size(); ++i) out[i] = std::move(fn_out[i]);
  if (should_compute_output(0)) {
    if (!fn_out.empty() && fn_out[0].defined()) {
      (void)region.copy_(fn_out[0]);
    } else {
      (void)kiln::zero_(region);
    }
    out[0] = std::move(result);
  }
  return out;
}

}  // namespace kiln::autograd
