// The thread-local grad mode flag. Grad mode lives in the thread-local
// exclude set: disabling it excludes the Autograd key, so ops skip autograd
// kernels entirely (no per-op check).
#include "eager/autograd/GradMode.h"

#include "eager/dispatch/LocalDispatchKeySet.h"

namespace kiln::autograd {

bool GradMode::is_enabled() { return !local_dispatch_key_set().excluded.has(DispatchKey::Autograd); }

void GradMode::set_enabled(bool enabled) {
  auto& tls = local_dispatch_key_set();
  tls.excluded = enabled ? tls.excluded.remove(DispatchKey::Autograd) : tls.excluded.add(DispatchKey::Autograd);
}

}  // namespace kiln::autograd
