// Common-subexpression elimination: one node for each distinct computation.
#pragma once

#include <cstddef>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given graph(%x):
///         %a = kiln::mul.Scalar(%x, 2)
///         %b = kiln::mul.Scalar(%x, 2)       # same op, inputs, attributes and types as %a
///         %r = kiln::add.Tensor(%a, %b, alpha=1)
///         return (%r)
/// Do    eliminate_common_subexpressions(g).
/// Result add reads %a twice and the second mul is erased. Constants and list
///        constructions merge the same way. Never merged: random ops, generators, ops that
///        write an argument, nodes that read or define a value some node writes,
///        and two nodes whose results are both graph outputs (eager returns two
///        tensors) (See Note [When a pass may drop, merge or forward a value]).
///        Returns the number of nodes merged away.
size_t eliminate_common_subexpressions(ir::Graph& g);

}  // namespace kiln::passes
