// Dispatch key names for error messages.
#include "eager/core/DispatchKeySet.h"

namespace kiln {

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
#define KILN_DISPATCH_KEY_NAME_(name) \
  case DispatchKey::name:             \
    return #name;
    KILN_FORALL_DISPATCH_KEYS(KILN_DISPATCH_KEY_NAME_)
#undef KILN_DISPATCH_KEY_NAME_
    case DispatchKey::NumKeys:
    case DispatchKey::Undefined:
      break;
  }
  return "Undefined";
}

}  // namespace kiln
