// Printer: the text form of a Graph (the parser reads it back; see ir/README.md).
#pragma once

#include <string>

#include "ir/Graph.h"

namespace kiln::ir {

/// Given a graph.   Do print(g).   Result its text; parse(print(g)) prints the same text.
/// Unnamed values print as %0, %1, ... in definition order; named ones as %name.
[[nodiscard]] std::string print(const Graph& g);

}  // namespace kiln::ir
