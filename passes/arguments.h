// Reading an op node's arguments by their schema names, for the passes that
// match on them.
#pragma once

#include <string_view>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given n = kiln::add.Scalar(%x, %two, alpha=1) with %two = prim::Constant(value=2).
/// Do    literal_argument(n, "other"), literal_argument(n, "alpha").
/// Result the literals 2 and 1: an attribute, or the value of a constant
///        input; nullptr when the argument is another value or n has no such argument.
[[nodiscard]] const ir::Attribute* literal_argument(const ir::Node& n, std::string_view name);

/// Given n = kiln::add.Scalar(%x, %two, alpha=1).
/// Do    value_argument(n, "self").   Result %x (nullptr for an argument given as an attribute).
[[nodiscard]] ir::Value* value_argument(const ir::Node& n, std::string_view name);

/// The value n reads as its first schema argument (`self`, `input`), or nullptr.
[[nodiscard]] ir::Value* first_argument(const ir::Node& n);

}  // namespace kiln::passes
