// The warning handler.
#include "eager/core/Warning.h"

#include <atomic>
#include <cstdio>

namespace kiln {

namespace {
void print_warning(const std::string& message) { std::fprintf(stderr, "kiln warning: %s\n", message.c_str()); }
std::atomic<WarningHandler> g_handler{&print_warning};
}  // namespace

void warn(const std::string& message) { g_handler.load()(message); }

void set_warning_handler(WarningHandler handler) { g_handler.store(handler ? handler : &print_warning); }

}  // namespace kiln
