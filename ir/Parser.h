// Parser: the text form (see ir/README.md) back into a Graph.
#pragma once

#include <memory>
#include <string_view>

#include "ir/Graph.h"
#include "ir/ParseError.h"

namespace kiln::ir {

/// Given the text print(g) wrote (or a person wrote).
/// Do    parse(text).
/// Result a new Graph that prints the same text. ParseError naming the line
/// and column for malformed text, an unknown operator, a value used before
/// its definition or defined twice. The graph is not verified: call verify().
[[nodiscard]] std::unique_ptr<Graph> parse(std::string_view text);

}  // namespace kiln::ir
