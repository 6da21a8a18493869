// The thread-local dispatch key state.
#include "eager/dispatch/LocalDispatchKeySet.h"

namespace kiln {

LocalDispatchKeySet& local_dispatch_key_set() {
  thread_local LocalDispatchKeySet state;
  return state;
}

}  // namespace kiln
