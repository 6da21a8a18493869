// Verifier: checks that a Graph is well formed before a pass, codegen or the
// interpreter relies on it.
#pragma once

#include "ir/Graph.h"

namespace kiln::ir {

/// Given a graph.   Do verify(g).   Result nothing when it is well formed;
/// otherwise a RuntimeError "ir verify: <node>: <problem>" for the first problem:
///  - SSA: every input is defined once, by a node earlier in the list (or a graph input);
///  - no dangling uses: every use is by a node in the list (or the return) and the
///    use lists agree with the nodes' inputs;
///  - op nodes name a registered operator, and their inputs and attributes bind to
///    its schema's arguments with fitting types and kinds; their outputs fit its returns;
///  - structural nodes have their shapes (a constant: one `value`, one output of its type);
///  - tensor types are self-consistent (strides match the rank).
void verify(const Graph& g);

}  // namespace kiln::ir
