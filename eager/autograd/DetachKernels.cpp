// detach and detach_ at the Autograd key: the one place history is cut on
// purpose (their results must not get a node from the Autograd fallback).
#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"
#include "eager/dispatch/Library.h"

namespace kiln::autograd {

namespace {

Tensor detach_autograd(DispatchKeySet, const Tensor& self) { return detached_alias(self); }

Tensor detach__autograd(DispatchKeySet, const Tensor& self) {
  if (AutogradMeta* m = autograd_meta(self)) {
    KILN_CHECK(!m->view_history, "Can't detach views in-place. Use detach() instead.");
    m->grad_fn.reset();
    m->leaf_requires_grad = false;
    m->output_nr = 0;
  }
  self.impl()->set_key_set(self.key_set().remove(DispatchKey::Autograd));
  return self;
}

}  // namespace

KILN_LIBRARY_IMPL(kiln, Autograd, m) {
  m.impl("detach", &detach_autograd);
  m.impl("detach_", &detach__autograd);
}

}  // namespace kiln::autograd
