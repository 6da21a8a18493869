// Thread-local include and exclude sets, and the RAII guards that change them.
#pragma once

#include "eager/core/DispatchKeySet.h"

namespace kiln {

/// Keys added to (included) or removed from (excluded) every call's key set on
/// this thread. BackendSelect is included by default so factory functions,
/// which have no tensor argument, still find a kernel (see Note [Dispatch key order]).
struct LocalDispatchKeySet {
  DispatchKeySet included{DispatchKey::BackendSelect};
  DispatchKeySet excluded;
};

[[nodiscard]] LocalDispatchKeySet& local_dispatch_key_set();

/// Adds keys to this thread's include set for the guard's lifetime.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys)
      : tls_(local_dispatch_key_set()), added_(keys - tls_.included) {
    tls_.included = tls_.included | added_;
  }
  ~IncludeDispatchKeyGuard() { tls_.included = tls_.included - added_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
  DispatchKeySet added_;  // only what was not already there, so nesting unwinds correctly
};

/// Removes keys from dispatch on this thread for the guard's lifetime.
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys)
      : tls_(local_dispatch_key_set()), added_(keys - tls_.excluded) {
    tls_.excluded = tls_.excluded | added_;
  }
  ~ExcludeDispatchKeyGuard() { tls_.excluded = tls_.excluded - added_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
  DispatchKeySet added_;
};

}  // namespace kiln
