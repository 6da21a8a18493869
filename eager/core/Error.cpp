// Out-of-line throw keeps the check macros' fast path small.
#include "eager/core/Error.h"

namespace kiln::detail {

void throw_error(ErrorKind kind, const char* file, int line, std::string msg) {
  throw Error(kind, std::move(msg), file, line);
}

}  // namespace kiln::detail
