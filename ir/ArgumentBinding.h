// ArgumentBinding: which input or attribute of an op node supplies each of
// its schema's arguments. See Note [The IR's shape].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/Node.h"

namespace kiln::ir {

/// One schema argument's source: an index into the node's inputs or into its attributes.
struct ArgumentSource {
  bool is_attribute = false;
  size_t index = 0;
};

/// The source of every schema argument of op node `n`, in schema order, or
/// nullopt with the reason in `why` ("unknown argument 'foo'", "argument
/// 'alpha' is given twice", "expects 2 value arguments (self, other), got 1").
[[nodiscard]] std::optional<std::vector<ArgumentSource>> bind_arguments(const Node& n, std::string* why = nullptr);

}  // namespace kiln::ir
