// Dead-code elimination: drops nodes whose results nothing reads.
#pragma once

#include <cstddef>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given graph(%x):
///         %a = kiln::relu(%x)          # read by nobody
///         %b = kiln::exp(%x)
///         %m = kiln::bernoulli.p(%x, p=0.5, generator=None)   # unread, but random
///         %c = kiln::add_.Scalar(%b, 1, alpha=1)              # writes %b
///         return (%b)
/// Do    eliminate_dead_code(g).
/// Result relu is gone; exp, bernoulli and add_ stay (See Note [When a pass
///        may drop, merge or forward a value]). Returns the number of nodes erased.
size_t eliminate_dead_code(ir::Graph& g);

}  // namespace kiln::passes
