// Views under autograd: which tensor a view aliases, how its history is
// regenerated from that tensor's, and what an in-place op through a view does
// to the graph (PyTorch's differentiable views and CopySlices).
#pragma once

#include <memory>

#include "eager/autograd/Node.h"

namespace kiln::autograd {

struct AutogradMeta;

// Note [Views know their base]
// ----------------------------
// Every view op's kernel goes through make_view (eager/kernels/Views.cpp),
// which records on the new TensorImpl the root tensor it aliases (a view of a
// view records the root, which is never itself a view) and how it was made
// (ViewCreation: in grad mode, with grad mode off, or as one of several
// outputs). Recording it in the core, for every view and not only for views of
// tensors that require grad, is what lets `out = zeros(n); out[i] = f(w)` give
// `out` a history: the op that writes through the view may be the first to
// involve a tensor that requires grad, and no autograd kernel ran when the view
// was made. It costs one reference per view.
//
// How a view is regenerated from its base: PyTorch can replay the recorded view
// op (a view function) but on CPU falls back to as_strided(sizes, strides,
// offset) over the base, and so does kiln, always. A view's geometry is its
// whole definition relative to the base's storage, so as_strided replays every
// view op (select, slice, transpose, diagonal, expand, split outputs, chains of
// them) with one node kind, AsStridedBackward0, the name PyTorch shows too; a
// per-op replay would need a closure per view op from the generator for the
// same gradients. The price is as_strided_backward's generality (a scatter
// through a storage-shaped buffer) instead of, say, select_backward.
//
// A view that has history (made by a view op from a tensor that requires grad,
// or modified in place) remembers the version it had when that history was
// set (AutogradMeta::attr_version). The version counter is shared with the
// base, so any in-place write through the base or another alias changes it;
// the next time the view's history is asked for (gradient_edge, grad_fn) it
// is regenerated as AsStridedBackward0 over the base's current history, as
// PyTorch does lazily.
//
// A view with no history of its own (made from a tensor that did not require
// grad, or with grad mode off) follows PyTorch's rules too: it requires grad
// whenever its base does (TensorImpl::requires_grad), every floating view
// carries the Autograd key (make_view) so its ops reach autograd kernels once
// the base gains history, and the version recorded when it was made
// (TensorImpl::view_version) tells when a write through an alias moved past
// it: then it gets the regenerated history, or, for a view made in no_grad mode
// or as one output of split/unbind, the "indirect" error of view_rebase_error.
// A view made in no_grad mode whose base was not written keeps no grad_fn and
// no gradient edge (gradients into it are dropped, as PyTorch's). retain_grad
// follows the tensor to its new grad_fn; register_hook hooks stay on the node
// they were registered on (both as PyTorch).

// Note [In-place through a view: CopySlices]
// ------------------------------------------
// When an in-place op `fn` with a tensor that requires grad writes into a view
// (rebase_history), the base's values changed in the view's region only. The
// base gets a CopySlices node whose backward takes the base's gradient, runs
// fn's backward on the region (as_strided of a copy of that gradient), writes
// fn's gradient for its self into the region and passes the rest through to
// the base's previous history; fn's gradients for its other operands go out on
// CopySlices' other edges. The view's own history is then regenerated over the
// base's new one (Note [Views know their base]). Everything CopySlices does in
// backward goes through the dispatcher, so create_graph differentiates it. The
// errors PyTorch raises instead (a view of a leaf that requires grad, a view
// made with grad mode off, an output of split/unbind/chunk, a view whose
// elements overlap in memory) are raised by check_inplace before the op runs.

/// Whether two elements of (sizes, strides) may share a memory location. Dims
/// of size 1 do not matter; sorted by stride, each dim's stride must step past
/// everything the smaller dims reach. Conservative: a true "may overlap" for an
/// exotic interleaved layout that does not.
[[nodiscard]] bool may_overlap(IntArrayRef sizes, IntArrayRef strides);

/// Called by the generated kernel of a view op after it ran (in grad mode):
/// fixes `view`'s ViewCreation (make_view saw the Autograd key excluded, as it
/// is below Autograd) to Default, or MultiOutput for split/unbind outputs, or
/// what `self` had when it is itself a restricted view; when the view got
/// history, records its version for regeneration.
void note_view(const Tensor& self, const Tensor& view, bool has_history, bool multi_output);

/// The view's history regenerated over its base's current one when a write
/// through any alias made it stale (Note [Views know their base]).
void refresh_view_history(const Tensor& t, AutogradMeta& m);

/// RuntimeError with PyTorch's text for an in-place change of a view made in
/// no_grad mode or as one of several outputs: `indirect` when the write went
/// through its base or another alias and the view's history is asked for.
[[noreturn]] void view_rebase_error(const Tensor& view, bool indirect);

/// Checks an in-place op on `self` may record history (`needs_grad`: some
/// input requires grad): RuntimeError with PyTorch's text for a leaf that
/// requires grad, a view of one, and the views of Note [In-place through a
/// view: CopySlices] that may not be modified in place.
void check_inplace(const Tensor& self, bool needs_grad);

/// Gives `self`, just modified in place by the op `fn` records, its new
/// history: set_history for a tensor that is not a view, CopySlices on the
/// base and a regenerated history on the view otherwise.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn);

}  // namespace kiln::autograd
