// Warnings from C++ (a resized out= tensor, a deprecated argument): routed to a
// handler that the Python layer replaces with warnings.warn(UserWarning).
#pragma once

#include <string>

#include "eager/core/Error.h"

namespace kiln {

using WarningHandler = void (*)(const std::string& message);

/// Reports `message` through the current handler (stderr by default).
void warn(const std::string& message);
void set_warning_handler(WarningHandler handler);

}  // namespace kiln

/// KILN_WARN("An output with one or more elements was resized since it had shape ", s, ...)
#define KILN_WARN(...) ::kiln::warn(::kiln::detail::str(__VA_ARGS__))
