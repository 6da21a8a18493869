// Fuzz target: the dispatcher's schema parser (FunctionSchema::parse). Any
// bytes must end in a parsed schema or a kiln::Error; a parsed schema prints
// in canonical form, and that form parses back to the same schema.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/dispatch/FunctionSchema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string canonical;
  try {
    canonical = kiln::FunctionSchema::parse(text).str();
  } catch (const kiln::Error&) {
    return 0;
  }
  // The canonical form drops the namespace; it must read back as itself.
  std::string reparsed;
  try {
    reparsed = kiln::FunctionSchema::parse(canonical).str();
  } catch (const kiln::Error& error) {
    std::cerr << "schema fuzz: canonical form does not parse: " << canonical << "\n  " << error.what() << "\n";
    std::abort();
  }
  if (reparsed != canonical) {
    std::cerr << "schema fuzz: round trip changed\n  " << canonical << "\n  " << reparsed << "\n";
    std::abort();
  }
  return 0;
}
