// Algebraic simplification: named rewrite rules (x * 1 -> x, transpose of a
// transpose -> x, a cast to the dtype a tensor already has -> the tensor, ...),
// listed in one table in simplify_algebra.cpp and applied until none fires.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given graph(%x : f32[2, 3]):
///         %a : f32[2, 3] = kiln::mul.Scalar(%x, other=1)
///         %t : f32[3, 2] = kiln::transpose.int(%a, dim0=0, dim1=1)
///         %u : f32[2, 3] = kiln::transpose.int(%t, dim0=1, dim1=0)
///         %r : f32[2, 3] = kiln::exp(%u)
///         return (%r)
/// Do    simplify_algebra(g).
/// Result exp reads %x (rules mul_by_one, then double_transpose); the nodes
///        left unread are for eliminate_dead_code. A rule that would replace a
///        value by another fires only where the two have the same dtype, sizes,
///        strides and device and the storage rules allow it (See Note [When a
///        pass may drop, merge or forward a value]). Returns the number of
///        rewrites; `fired`, when given, counts them per rule name.
size_t simplify_algebra(ir::Graph& g, std::map<std::string, size_t>* fired = nullptr);

/// The rule names of the table, in order ("mul_by_one", "add_zero", ...), and
/// the operator each applies to.
struct RewriteRuleInfo {
  std::string_view name;
  std::string_view op;
  std::string_view rewrite;  // "x * 1 -> x"
};
[[nodiscard]] std::vector<RewriteRuleInfo> rewrite_rules();

}  // namespace kiln::passes
