// Fuzz target: the IR's text form (ir::parse, then ir::verify). Any bytes must
// end in a parse error, a verification error, or a verified graph that prints
// back to a text which parses and prints the same (Note [IR fuzzing] in
// tests/cpp/test_ir_text.cpp runs the deterministic counterpart in the suite).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "eager/core/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<kiln::ir::Graph> graph;
  try {
    graph = kiln::ir::parse(text);
  } catch (const kiln::Error&) {
    return 0;
  }
  try {
    kiln::ir::verify(*graph);
  } catch (const kiln::Error&) {
    (void)kiln::ir::print(*graph);  // a graph that fails verification still prints
    return 0;
  }
  const std::string printed = kiln::ir::print(*graph);
  std::string reprinted;
  try {
    reprinted = kiln::ir::print(*kiln::ir::parse(printed));
  } catch (const kiln::Error& error) {
    std::cerr << "ir fuzz: a verified graph's text does not parse:\n" << printed << error.what() << "\n";
    std::abort();
  }
  if (reprinted != printed) {
    std::cerr << "ir fuzz: print(parse(print(g))) != print(g):\n" << printed << "---\n" << reprinted;
    std::abort();
  }
  return 0;
}
