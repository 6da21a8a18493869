// cat's BackendSelect kernel: a call whose list holds no tensor runs the CPU kernel, so
// cat([]) (and concat, concatenate, which call it) fails with cat's own ValueError.
// See Note [cat of an empty list].
#include "eager/dispatch/Library.h"
#include "kiln/generated/Functions.h"

namespace kiln::native {

// Note [cat of an empty list]
// ---------------------------
// A call's keys come from its tensor arguments; cat([]) has none, only BackendSelect (in every thread's
// include set, a fallthrough for ops that are not factories), so the dispatcher had no kernel to run and
// raised NotImplementedError ("There were no tensor arguments to this function"). PyTorch routes such a
// call to a default-backend kernel, whose check raises ValueError "torch.cat(): expected a non-empty list
// of Tensors". cat's BackendSelect kernel does the same: with no backend key below it, it adds CPU's.
// With tensors it only passes the call down (one more indirection per cat). cat.out always has a tensor.

namespace {

Tensor cat_backend_select(DispatchKeySet keys, TensorList tensors, int64_t dim) {
  DispatchKeySet below = keys.below(DispatchKey::BackendSelect);
  if (tensors.empty()) below = below | DispatchKeySet(DispatchKey::CPU);
  return ops::cat::redispatch(below, tensors, dim);
}

}  // namespace

KILN_LIBRARY_IMPL(kiln, BackendSelect, m) { m.impl("cat", &cat_backend_select); }

}  // namespace kiln::native
